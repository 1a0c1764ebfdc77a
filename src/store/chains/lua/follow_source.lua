-- follow_source: step 1 of follow/unfollow, on the follower's own keys.
--
-- The follower's `following` ZSET is the authority on the relationship. This
-- step changes it and recounts `following` as its ZCARD (so the counter
-- always equals the set size). The change's sequence number is its outbox
-- op number (op_begin, taken before this step), and a change applies only
-- if no later change between the same two users applied already: a worker
-- finishing a dead request's follow cannot undo an unfollow made since.
-- Step 2 on the followee's keys applies changes in the same sequence order,
-- so racing follow/unfollow pairs converge on whatever this step decided
-- last. Atomic because the check, the change, the recount and the stamp run
-- as one script; idempotent because a repeated change changes nothing.
-- One slot: the follower's keys.
--
-- KEYS[1] follower's following ZSET  KEYS[2] follower's user HASH
-- KEYS[3] follower's applied-change HASH (followee -> sequence)
-- ARGV[1] followee id  ARGV[2] "1" follow / "0" unfollow  ARGV[3] now
-- ARGV[4] the sequence  KEYS[4] follower's hide HASH (relate.lua): a
-- follow between users with a block either way is refused here, the
-- authority, so no later step makes one
-- The last applied sequence is kept per followee, and beside it (field
-- `c:<followee>`) the sequence of the last change that changed something,
-- so a second run of that change (a worker finishing it) still reports it
-- as changed and its event is not lost.
-- Returns {changed 0/1, applied 0/1 (0: a later change won; -1: blocked),
-- following}.
local last = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
local seq = tonumber(ARGV[4])
if seq == last then
  local c = redis.call('HGET', KEYS[3], 'c:' .. ARGV[1])
  return {c == ARGV[4] and 1 or 0, 1, redis.call('ZCARD', KEYS[1])}
end
if seq < last then
  return {0, 0, redis.call('ZCARD', KEYS[1])}
end
if ARGV[2] == '1' then
  local rel = redis.call('HGET', KEYS[4], ARGV[1])
  if rel and bit.band(tonumber(string.match(rel, '^(%d+):')), 3) ~= 0 then
    return {0, -1, redis.call('ZCARD', KEYS[1])}
  end
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
local changed
if ARGV[2] == '1' then
  changed = redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[1])
else
  changed = redis.call('ZREM', KEYS[1], ARGV[1])
end
if changed == 1 then
  redis.call('HSET', KEYS[3], 'c:' .. ARGV[1], ARGV[4])
end
local count = redis.call('ZCARD', KEYS[1])
redis.call('HSET', KEYS[2], 'following', count)
return {changed, 1, count}
