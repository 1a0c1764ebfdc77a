-- follow_home: step 3 of follow/unfollow, on the follower's home timeline.
--
-- Copies the followee's newest statuses into the home timeline (then trims it)
-- when the follower still follows them, or removes them when the follower
-- still does not. Checking the authoritative `following` ZSET inside the same
-- script makes the step atomic and safe to retry or to run late: a stale
-- step 3 of an earlier follow cannot refill the home of a user who has since
-- unfollowed. The change's event goes out when its entry retires, once. One slot:
-- the follower's keys.
--
-- A followee the follower mutes adds nothing (a mute keeps their statuses
-- off the home); the other users whose relations hide them are returned, so
-- that the caller takes out reposts of their statuses (home_hide.lua).
--
-- KEYS[1] follower's following ZSET  KEYS[2] follower's home ZSET
-- KEYS[3] follower's hide HASH
-- ARGV[1] followee id  ARGV[2] home cap
-- ARGV[3] n, the number of id, score pairs  ARGV[4 .. 3+2n] the pairs (a
-- score is the status's `posted`: timelines keep its whole second, see
-- post_whole.lua)
-- ARGV[4+2n ..] the followee's recently deleted ids (removed on unfollow: a
-- delete's fan-out does not reach someone who has just left)
-- Returns {entries added or removed, {hidden user id, ...}}.
local following = redis.call('ZSCORE', KEYS[1], ARGV[1])
local hidden = {}
local muted = false
if following then
  local rel = redis.call('HGETALL', KEYS[3])
  for i = 1, #rel, 2 do
    local b = string.match(rel[i + 1], '^(%d+):')
    if b and tonumber(b) ~= 0 and string.match(rel[i], '^%d+$') then
      if rel[i] == ARGV[1] then muted = true end
      hidden[#hidden + 1] = rel[i]
    end
  end
end
local n = 0
local last = 3 + 2 * tonumber(ARGV[3])
if following and not muted then
  for i = 4, last, 2 do
    n = n + redis.call('ZADD', KEYS[2], string.format('%d', math.floor(tonumber(ARGV[i + 1]))), ARGV[i])
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[2]) - 1)
else
  for i = 4, #ARGV do
    if i > last or (i - 4) % 2 == 0 then
      n = n + redis.call('ZREM', KEYS[2], ARGV[i])
    end
  end
end
return {n, hidden}
