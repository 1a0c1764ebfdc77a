-- follow_home: step 3 of follow/unfollow, on the follower's home timeline.
--
-- Copies the followee's newest statuses into the home timeline (then trims it)
-- when the follower still follows them, or removes them when the follower
-- still does not. Checking the authoritative `following` ZSET inside the same
-- script makes the step atomic and safe to retry or to run late: a stale
-- step 3 of an earlier follow cannot refill the home of a user who has since
-- unfollowed. The change's event goes out with op_finish, once. One slot:
-- the follower's keys.
--
-- KEYS[1] follower's following ZSET  KEYS[2] follower's home ZSET
-- ARGV[1] followee id  ARGV[2] home cap
-- ARGV[3] n, the number of id, score pairs  ARGV[4 .. 3+2n] the pairs
-- ARGV[4+2n ..] the followee's recently deleted ids (removed on unfollow: a
-- delete's fan-out does not reach someone who has just left)
-- Returns the number of home entries added or removed.
local following = redis.call('ZSCORE', KEYS[1], ARGV[1])
local n = 0
local last = 3 + 2 * tonumber(ARGV[3])
if following then
  for i = 4, last, 2 do
    n = n + redis.call('ZADD', KEYS[2], ARGV[i + 1], ARGV[i])
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[2]) - 1)
else
  for i = 4, #ARGV do
    if i > last or (i - 4) % 2 == 0 then
      n = n + redis.call('ZREM', KEYS[2], ARGV[i])
    end
  end
end
return n
