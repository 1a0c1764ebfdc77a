-- op_retire: the last step of a partitioned outbox op (store::outbox):
-- removes its entry, keeps its answer under its idempotency key, queues its
-- fan-out tasks on the partition's fan-out STREAM and, when the op emitted
-- (`emit_once.lua`), notes its number and the shards of the event log it
-- emitted in (`<op>:<shard>,<shard>`) in the partition's `retired` ZSET,
-- from which the sweeper later forgets the op's marks in those shards'
-- `emitted` HASHes.
--
-- Atomic: the removal, the answer, the tasks and the note happen together,
-- and only in the call that removed the entry, so every retired op that has
-- a mark has a note, its tasks are queued once, and a rerun changes
-- nothing. One slot: the partition's keys (an op's idempotency key lives in
-- its partition: store::keys).
--
-- KEYS[1] the partition's outbox ZSET  KEYS[2] its retired ZSET
-- KEYS[3] the idempotency STRING (the outbox again when there is none)
-- KEYS[4] the partition's fan-out STREAM
-- ARGV[1] member  ARGV[2] op number  ARGV[3] now  ARGV[4] the shards it
-- emitted in, comma-separated ("": none)
-- ARGV[5] the answer for the idempotency key ("" when there is none)
-- ARGV[6 ..] the fan-out tasks
-- Returns 1 when this call retired the entry, else 0.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2] .. ':' .. ARGV[4])
end
if ARGV[5] ~= '' and KEYS[3] ~= KEYS[1] then
  redis.call('SET', KEYS[3], ARGV[5], 'KEEPTTL')
end
for i = 6, #ARGV do
  redis.call('XADD', KEYS[4], '*', 't', ARGV[i])
end
return 1
