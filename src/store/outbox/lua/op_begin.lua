-- op_begin: records a write that spans slots in the outbox, before any of
-- its steps runs, so a crash between steps leaves the record for a worker
-- to finish (workers::outbox_sweeper), never half a write.
--
-- Atomic: the op number, the outbox entry and (with an idempotency key) the
-- key's claim are taken together, so two requests with one key cannot both
-- begin. One slot: every key is one outbox partition's (store::outbox; an
-- idempotency key lives in its author's partition, where the post or
-- message is recorded).
--
-- KEYS[1] outbox ZSET  KEYS[2] op counter  KEYS[3] idempotency STRING (the
-- counter again when there is no key)
-- ARGV[1] op JSON  ARGV[2] lease deadline  ARGV[3] "1" with an idempotency
-- key  ARGV[4] its TTL (s)  ARGV[5] the partition count  ARGV[6] the
-- partition's index: the op number is counter * ARGV[5] + ARGV[6]
-- Returns {"ok", member} (member = "<n>|<op JSON>") or {"dup", value}, the
-- value being the first answer or "pending|<member>" while that first write
-- is under way.
if ARGV[3] == '1' then
  local first = redis.call('GET', KEYS[3])
  if first then
    return {'dup', first}
  end
end
local n = redis.call('INCR', KEYS[2]) * tonumber(ARGV[5]) + tonumber(ARGV[6])
local member = string.format('%d', n) .. '|' .. ARGV[1]
redis.call('ZADD', KEYS[1], ARGV[2], member)
if ARGV[3] == '1' then
  redis.call('SET', KEYS[3], 'pending|' .. member, 'EX', ARGV[4])
end
return {'ok', member}
