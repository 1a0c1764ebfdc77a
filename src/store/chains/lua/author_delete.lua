-- author_delete: a delete's step on its author's keys: the status leaves
-- the profile and home timelines, enters the recently-deleted ZSET (so an
-- unfollow that read the profile before this step still takes it out of
-- the follower's home), and `posts` is recounted.
--
-- Atomic and idempotent, like author_post. One slot: the author's keys.
--
-- KEYS[1] user HASH  KEYS[2] profile ZSET  KEYS[3] home ZSET
-- KEYS[4] recently-deleted ZSET
-- ARGV[1] status id  ARGV[2] now  ARGV[3] how many recent deletes to keep
-- Returns the posts count.
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[3]) - 1)
local posts = redis.call('ZCARD', KEYS[2])
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'posts', posts)
end
return posts
