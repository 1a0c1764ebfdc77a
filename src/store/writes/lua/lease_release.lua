-- lease_release: gives a lease back if this holder still holds it (a
-- process shutting down frees its status-id number at once rather than
-- when the lease lapses).
--
-- Atomic: the check and the DEL run together, so a lease that lapsed and
-- was taken by another process is never deleted by its old holder. One key.
--
-- KEYS[1] the lease STRING
-- ARGV[1] the holder's token
-- Returns 1 when released, 0 when it was not (or no longer) this holder's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
