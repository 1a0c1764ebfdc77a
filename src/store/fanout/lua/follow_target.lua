-- follow_target: step 2 of follow/unfollow, on the followee's own keys.
--
-- Applies "follower follows (or not) at sequence S" to the followee's
-- `followers` ZSET unless a change with a higher sequence from the same
-- follower was applied already, recounts `followers` as the ZCARD, and
-- returns the followee's newest statuses (and most recently deleted ids, for
-- an unfollow to take out too) for step 3. Atomic: the sequence
-- check, the change and the recount run as one script; idempotent: applying
-- the same sequence twice leaves the same state.
--
-- KEYS[1] followee's followers ZSET  KEYS[2] followee's user HASH
-- KEYS[3] followee's follower-sequence HASH  KEYS[4] followee's profile ZSET
-- KEYS[5] followee's recently-deleted ZSET
-- KEYS[6] followee's hide HASH (a follow is not added while a block either
-- way holds: relate.lua ended it on this side)
-- ARGV[1] follower id  ARGV[2] "1" follow / "0" unfollow  ARGV[3] sequence
-- ARGV[4] follow time  ARGV[5] how many newest statuses to return
-- Returns {followers count, {id, score, id, score, ...}, {deleted id, ...}}
-- or {"nouser"}.
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {'nouser'}
end
local last = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '-1')
if tonumber(ARGV[3]) >= last then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
  local rel = redis.call('HGET', KEYS[6], ARGV[1])
  local blocked = rel and bit.band(tonumber(string.match(rel, '^(%d+):')), 3) ~= 0
  if ARGV[2] == '1' and not blocked then
    redis.call('ZADD', KEYS[1], 'NX', ARGV[4], ARGV[1])
  elseif ARGV[2] == '1' then
    -- nothing: the block ended this follow
  else
    redis.call('ZREM', KEYS[1], ARGV[1])
  end
end
local count = redis.call('ZCARD', KEYS[1])
redis.call('HSET', KEYS[2], 'followers', count)
local newest = redis.call('ZREVRANGE', KEYS[4], 0, tonumber(ARGV[5]) - 1, 'WITHSCORES')
local deleted = redis.call('ZREVRANGE', KEYS[5], 0, tonumber(ARGV[5]) - 1)
return {count, newest, deleted}
