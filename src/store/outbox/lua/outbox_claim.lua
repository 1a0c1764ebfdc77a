-- outbox_claim: takes outbox entries whose lease has run out (their request
-- died or hung up before finishing) and extends their lease to the caller;
-- also lists ops retired long enough ago that their marks
-- in `{g}`'s `emitted` HASH may go (store::outbox; the caller removes the
-- marks, then the numbers from `retired`); and tells how many tasks the
-- fan-out queue beside it holds (a hint for the workers: fanout_hints).
--
-- Atomic: two workers cannot claim the same entry at once, since the check
-- of the deadline and its extension happen with nothing in between. One
-- slot: the outbox partition's.
--
-- KEYS[1] outbox ZSET  KEYS[2] the partition's retired ZSET  KEYS[3] the
-- fan-out STREAM of the same slot
-- ARGV[1] now  ARGV[2] new deadline  ARGV[3] most entries to take
-- ARGV[4] retired before this are listed  ARGV[5] most numbers to list
-- Returns {the ops taken, the retired numbers listed, the fan-out tasks
-- queued or under way}.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, op in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], op)
end
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[4], 'LIMIT', 0, tonumber(ARGV[5]))
return {due, old, redis.call('XLEN', KEYS[3])}
