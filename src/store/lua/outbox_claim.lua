-- outbox_claim: takes outbox entries whose lease has run out (their request
-- died or hung up before finishing) and extends their lease to the caller.
--
-- Atomic: two workers cannot claim the same entry at once, since the check
-- of the deadline and its extension happen with nothing in between. One key.
--
-- KEYS[1] outbox ZSET
-- ARGV[1] now  ARGV[2] new deadline  ARGV[3] most entries to take
-- Returns the ops taken.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, op in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], op)
end
return due
