-- like: a user likes (or stops liking) a status.
--
-- Atomic: the likers set, the user's liked list and the status's `likes`
-- count (recomputed as ZCARD of the likers, so it never drifts) change
-- together, and the like event is emitted only by the call that added the
-- like, so repeated likes are idempotent and announced once.
--
-- Keys: the status and its likers, the user's likes (user slot), the global
-- event buffer.
--
-- KEYS[1] status HASH  KEYS[2] likers ZSET  KEYS[3] user's likes ZSET
-- KEYS[4] events STREAM
-- ARGV[1] user id  ARGV[2] status id  ARGV[3] now  ARGV[4] "1" like / "0" unlike
-- ARGV[5] MAXLEN  ARGV[6] channel  ARGV[7] like event body JSON without "id"
-- Returns {changed 0/1, likes} or {"missing"}.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'missing'}
end
local changed
if ARGV[4] == '1' then
  changed = redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
  if changed == 1 then
    redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
  end
else
  changed = redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[2])
end
local likes = redis.call('ZCARD', KEYS[2])
redis.call('HSET', KEYS[1], 'likes', likes)
if changed == 1 and ARGV[4] == '1' then
  local eid = redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[5], '*', 'e', ARGV[7])
  redis.call('PUBLISH', ARGV[6], '{"id":"' .. eid .. '",' .. ARGV[7]:sub(2))
end
return {changed, likes}
