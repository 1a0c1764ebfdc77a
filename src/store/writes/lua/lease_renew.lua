-- lease_renew: pushes a lease's expiry forward if this holder still holds it.
--
-- Atomic: the check and the PEXPIRE run together, so a lease that expired
-- and was taken by another process is never extended by its old holder.
-- One key.
--
-- KEYS[1] the lease STRING
-- ARGV[1] the holder's token  ARGV[2] time to live (ms)
-- Returns 1 when renewed, 0 when the lease is not (or no longer) this holder's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
