-- trend_move: the counts one trending bucket of the first layout (in
-- `{trends}`) held for the hashtags of one trending partition, added to
-- that partition's bucket of the same minute, with the bucket's counted
-- statuses (store::migrate, move 8).
--
-- Atomic and idempotent: the member `moved` enters the partition's seen
-- SET in the same script, and only the call that added it adds the counts,
-- so a move started again after a crash counts nothing twice. Every
-- counted status goes to the seen SET of each partition that received
-- counts, so deleting a status posted before the move takes its tags out
-- of their partitions (trend.lua), once. One slot: the partition's.
--
-- KEYS[1] partition bucket ZSET  KEYS[2] partition seen SET
-- ARGV[1] TTL ms  ARGV[2] n, then n tag/count pairs, then the counted
-- status ids. Returns 1 when this call moved the counts, else 0.
if redis.call('SADD', KEYS[2], 'moved') == 0 then
  return 0
end
local n = tonumber(ARGV[2])
for i = 3, 1 + 2 * n, 2 do
  redis.call('ZINCRBY', KEYS[1], ARGV[i + 1], ARGV[i])
end
local ids = {}
for i = 3 + 2 * n, #ARGV do
  ids[#ids + 1] = ARGV[i]
  if #ids == 1000 then
    redis.call('SADD', KEYS[2], unpack(ids))
    ids = {}
  end
end
if #ids > 0 then
  redis.call('SADD', KEYS[2], unpack(ids))
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
