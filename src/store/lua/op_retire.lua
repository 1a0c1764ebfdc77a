-- op_retire: the last step of a partitioned outbox op (store::outbox):
-- removes its entry and, when the op emitted events, notes its number in
-- the partition's `retired` ZSET, from which the sweeper later forgets the
-- op's mark in `{g}`'s `emitted` HASH.
--
-- Atomic: the removal and the note happen together, so every retired op
-- that has a mark has a note (and a rerun notes nothing twice). One slot:
-- the partition's keys.
--
-- KEYS[1] the partition's outbox ZSET  KEYS[2] its retired ZSET
-- ARGV[1] member  ARGV[2] op number  ARGV[3] now  ARGV[4] "1": it emitted
-- Returns 1 when this call retired the entry, else 0.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
end
return 1
