-- home_unhide: after an unmute, brings the other user's newest statuses
-- back into the home timeline, as a follow's backfill does, when the user
-- follows them and nothing hides them any more.
--
-- Checking `following` and the relation bits in the same script makes a
-- late run harmless (an unfollow or a new mute since wins). Atomic: the
-- checks, the adds and the trim run as one script. One slot: the user's keys.
--
-- KEYS[1] following ZSET  KEYS[2] home ZSET  KEYS[3] hide HASH
-- ARGV[1] other id  ARGV[2] home cap  ARGV[3..] id, score pairs (a score
-- is the status's `posted`: timelines keep its whole second, see post_whole.lua)
-- Returns the number of entries added.
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local cur = redis.call('HGET', KEYS[3], ARGV[1])
if cur and tonumber(string.match(cur, '^(%d+):')) ~= 0 then
  return 0
end
local n = 0
for i = 3, #ARGV, 2 do
  n = n + redis.call('ZADD', KEYS[2], string.format('%d', math.floor(tonumber(ARGV[i + 1]))), ARGV[i])
end
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[2]) - 1)
return n
