-- audit_add: records one audit entry, keeping the newest ones. Atomic:
-- the entry, its place and the trim are one script. One slot: `{mod}`.
--
-- KEYS[1] audit HASH  KEYS[2] audit order ZSET
-- ARGV[1] id  ARGV[2] JSON  ARGV[3] minus the id (time-ordered)
-- ARGV[4] entries kept
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if extra > 0 then
  local old = redis.call('ZRANGE', KEYS[2], -extra, -1)
  redis.call('ZREMRANGEBYRANK', KEYS[2], -extra, -1)
  redis.call('HDEL', KEYS[1], unpack(old))
end
return 1
