-- stream_lease: takes one of a user's concurrent-stream slots, leased until
-- a time its holder keeps pushing forward (every server renews its own), so
-- the slots of a process that died lapse by themselves.
--
-- Atomic so that dropping the lapsed leases, counting the live ones and
-- adding the new one happen together: two servers cannot both take a user's
-- last slot. One key, in the user's slot {<uid>}.
--
-- KEYS[1] the user's stream leases ZSET (member -> lapses at, ms)
-- ARGV[1] member (server instance and stream number)  ARGV[2] now (ms)
-- ARGV[3] lease length (ms)  ARGV[4] most slots
-- Returns 1 when taken, 0 when every slot is held.
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
