-- author_post: a post's step on its author's keys: the profile and home
-- timelines gain the status, and `posts` is recounted.
--
-- Atomic: the counter is recomputed as ZCARD of the profile in the same
-- script, so it never drifts; idempotent: ZADD of the same member twice
-- changes nothing. One slot: the author's keys.
--
-- KEYS[1] user HASH  KEYS[2] profile ZSET  KEYS[3] home ZSET
-- ARGV[1] status id  ARGV[2] its score in timelines (the whole second of
-- its `posted`: model::timeline_score)  ARGV[3] home cap, or 0: this post
-- does not trim the home (model::trims_homes)
-- Returns the posts count, or -1 when the user does not exist.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
if ARGV[3] ~= '0' then
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[3]) - 1)
end
local posts = redis.call('ZCARD', KEYS[2])
redis.call('HSET', KEYS[1], 'posts', posts)
return posts
