-- trend: counts (or uncounts) a public status's hashtags in the trending
-- bucket of its minute.
--
-- Atomic and idempotent: the status id enters (leaves) the bucket's set of
-- counted statuses in the same script, and the tags are counted only by
-- the call that added (removed) it, so a step run twice counts once. One
-- slot: the trending partition `{t<j>}` that every tag given falls in
-- (store::keys::trend_part; a status with tags in several partitions is
-- counted by one call in each).
--
-- KEYS[1] bucket ZSET  KEYS[2] the bucket's counted statuses SET
-- ARGV[1] "1" count / "0" uncount  ARGV[2] status id  ARGV[3] TTL (s)
-- ARGV[4..] tags
local by = 1
local changed
if ARGV[1] == '1' then
  changed = redis.call('SADD', KEYS[2], ARGV[2])
else
  changed = redis.call('SREM', KEYS[2], ARGV[2])
  by = -1
end
if changed == 1 then
  -- The keys get their TTL when a tag enters the bucket (its count is then
  -- `by`): the first count of a bucket makes both keys, so both always
  -- have one, and a tag counted again sends no EXPIRE.
  local fresh = false
  for i = 4, #ARGV do
    if tonumber(redis.call('ZINCRBY', KEYS[1], by, ARGV[i])) == by then
      fresh = true
    end
  end
  if fresh then
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    redis.call('EXPIRE', KEYS[2], ARGV[3])
  end
end
return changed
