-- follow_home: step 3 of follow/unfollow, on the follower's home timeline.
--
-- Copies the followee's newest statuses into the home timeline (then trims it)
-- when the follower still follows them, or removes them when the follower
-- still does not. Checking the authoritative `following` ZSET inside the same
-- script makes the step atomic and safe to retry or to run late: a stale
-- step 3 of an earlier follow cannot refill the home of a user who has since
-- unfollowed.
--
-- KEYS[1] follower's following ZSET  KEYS[2] follower's home ZSET
-- ARGV[1] followee id  ARGV[2] home cap  ARGV[3..] id, score pairs
-- Returns the number of home entries added or removed.
local following = redis.call('ZSCORE', KEYS[1], ARGV[1])
local n = 0
if following then
  for i = 3, #ARGV, 2 do
    n = n + redis.call('ZADD', KEYS[2], ARGV[i + 1], ARGV[i])
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[2]) - 1)
else
  for i = 3, #ARGV, 2 do
    n = n + redis.call('ZREM', KEYS[2], ARGV[i])
  end
end
return n
