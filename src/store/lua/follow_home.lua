-- follow_home: step 3 of follow/unfollow, on the follower's home timeline;
-- the last state change of a follow, so it also emits the follow event.
--
-- Copies the followee's newest statuses into the home timeline (then trims it)
-- when the follower still follows them, or removes them when the follower
-- still does not. Checking the authoritative `following` ZSET inside the same
-- script makes the step atomic and safe to retry or to run late: a stale
-- step 3 of an earlier follow cannot refill the home of a user who has since
-- unfollowed. The event goes out only from the call that retires the
-- change's outbox entry, so a change is announced exactly once however
-- often this step runs (a retry, a worker finishing a dead request's work).
--
-- Keys: the follower's keys (one slot), the global outbox and event buffer.
--
-- KEYS[1] follower's following ZSET  KEYS[2] follower's home ZSET
-- KEYS[3] outbox ZSET  KEYS[4] events STREAM
-- ARGV[1] followee id  ARGV[2] home cap  ARGV[3] outbox op ("" for none)
-- ARGV[4] MAXLEN  ARGV[5] channel  ARGV[6] event body JSON without "id"
-- ARGV[7] n, the number of id, score pairs  ARGV[8 .. 7+2n] the pairs
-- ARGV[8+2n ..] the followee's recently deleted ids (removed on unfollow: a
-- delete's fan-out does not reach someone who has just left)
-- Returns the number of home entries added or removed.
local following = redis.call('ZSCORE', KEYS[1], ARGV[1])
local n = 0
local last = 7 + 2 * tonumber(ARGV[7])
if following then
  for i = 8, last, 2 do
    n = n + redis.call('ZADD', KEYS[2], ARGV[i + 1], ARGV[i])
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[2]) - 1)
else
  for i = 8, #ARGV do
    if i > last or (i - 8) % 2 == 0 then
      n = n + redis.call('ZREM', KEYS[2], ARGV[i])
    end
  end
end
if ARGV[3] ~= '' and redis.call('ZREM', KEYS[3], ARGV[3]) == 1 then
  local eid = redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[6])
  redis.call('PUBLISH', ARGV[5], '{"id":"' .. eid .. '",' .. ARGV[6]:sub(2))
end
return n
