-- report_resolve: resolves an open report and records its audit entry.
-- Atomic: the state check, the report's new JSON, its move from the open
-- to the resolved list and the audit entry are one script, so a report is
-- resolved once (a second resolution answers 'resolved') and every
-- resolution has exactly one entry. One slot: moderation's `{mod}` keys.
--
-- KEYS[1] reports HASH  KEYS[2] open ZSET  KEYS[3] resolved ZSET
-- KEYS[4] audit HASH  KEYS[5] audit order ZSET
-- ARGV[1] report id  ARGV[2] resolved JSON  ARGV[3] minus the audit id
-- (time-ordered: the score of both lists, newest first)
-- ARGV[4] audit id  ARGV[5] audit JSON  ARGV[6] audit entries kept
-- Returns 'ok', 'missing' or 'resolved'.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 'missing' end
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 'resolved' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[4], ARGV[4], ARGV[5])
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[4])
-- The oldest entries beyond the cap go (highest scores: oldest).
local cap = tonumber(ARGV[6])
local extra = redis.call('ZCARD', KEYS[5]) - cap
if extra > 0 then
  local old = redis.call('ZRANGE', KEYS[5], -extra, -1)
  redis.call('ZREMRANGEBYRANK', KEYS[5], -extra, -1)
  redis.call('HDEL', KEYS[4], unpack(old))
end
return 'ok'
