-- like: a user likes (or stops liking) a status: the step on the status's
-- keys, the authority on who likes it.
--
-- Atomic: the likers set and the status's `likes` count (recomputed as
-- ZCARD of the likers, so it never drifts) change together. The change's
-- sequence is its outbox op number, and it applies only if no later change
-- by the same user applied already, so a worker finishing a dead request's
-- like cannot undo a later unlike. One slot: the status's keys (the user's
-- own list of likes follows in its own step).
--
-- KEYS[1] status HASH  KEYS[2] likers ZSET  KEYS[3] like sequences HASH
-- ARGV[1] user id  ARGV[2] sequence  ARGV[3] now  ARGV[4] "1" like / "0" unlike
-- Returns {changed 0/1, likes} or {"missing"}.
if redis.call('HEXISTS', KEYS[1], 'id') == 0 or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then
  return {'missing'}
end
local last = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
local seq = tonumber(ARGV[2])
local changed = 0
if seq == last then
  -- A second run of the last change: reported as changed if it changed
  -- something (field `c:<uid>`), so its event is not lost.
  if redis.call('HGET', KEYS[3], 'c:' .. ARGV[1]) == ARGV[2] then
    changed = 1
  end
elseif seq > last then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
  if ARGV[4] == '1' then
    changed = redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
  else
    changed = redis.call('ZREM', KEYS[2], ARGV[1])
  end
  if changed == 1 then
    redis.call('HSET', KEYS[3], 'c:' .. ARGV[1], ARGV[2])
  end
end
local likes = redis.call('ZCARD', KEYS[2])
redis.call('HSET', KEYS[1], 'likes', likes)
return {changed, likes}
