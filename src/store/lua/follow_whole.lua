-- follow_whole: a follow or unfollow, every step of it, on one Redis (not a
-- cluster, where the same change is the chain follow_source,
-- follow_target, follow_home and op_finish, driven from the outbox).
--
-- Atomic: one script changes both users' sets and counters and the
-- follower's home, and emits the event, so there is nothing to finish after
-- a crash and no outbox entry; a racing post, delete or block runs wholly
-- before or after it. Not one slot: it names keys of both users and `{g}`,
-- which only a single Redis allows (Store::set_follow runs it only there).
--
-- KEYS[1] followee user HASH  KEYS[2] follower user HASH
-- KEYS[3] follower's following ZSET  KEYS[4] follower's applied-change HASH
-- KEYS[5] follower's hide HASH  KEYS[6] follower's home ZSET
-- KEYS[7] followee's followers ZSET  KEYS[8] followee's follower-sequence HASH
-- KEYS[9] followee's hide HASH  KEYS[10] followee's profile ZSET
-- KEYS[11] followee's recently-deleted ZSET  KEYS[12] events STREAM
-- KEYS[13] the op counter of the pair's outbox partition (store::outbox)
-- ARGV[1] follower id  ARGV[2] followee id  ARGV[3] "1" follow / "0" unfollow
-- ARGV[4] now  ARGV[5] home cap  ARGV[6] MAXLEN  ARGV[7] channel
-- ARGV[8] the event JSON without "id"  ARGV[9] stride, ARGV[10] offset: an
-- op number is counter * stride + offset (op_begin.lua)
-- Returns {changed 0/1, {hidden user id, ...}, {status id copied, ...}},
-- or {"nouser"}, or {"blocked"}.
local t = redis.call('HMGET', KEYS[1], 'id', 'deleted', 'suspended')
if not t[1] or t[2] or t[3] == '1' then
  return {'nouser'}
end
local follow = ARGV[3] == '1'
local function blocks(rel)
  return rel and bit.band(tonumber(string.match(rel, '^(%d+):')), 3) ~= 0
end
local hidden, muted = {}, false
local changed
if follow then
  -- The follower's relations: a block either way refuses the follow, a
  -- mute of the followee copies nothing, and every user hidden from the
  -- follower is returned (the caller takes out reposts of theirs).
  local rel = redis.call('HGETALL', KEYS[5])
  for i = 1, #rel, 2 do
    local b = string.match(rel[i + 1], '^(%d+):')
    if b and tonumber(b) ~= 0 and string.match(rel[i], '^%d+$') then
      if rel[i] == ARGV[2] then
        if bit.band(tonumber(b), 3) ~= 0 then
          return {'blocked'}
        end
        muted = true
      end
      hidden[#hidden + 1] = rel[i]
    end
  end
  if blocks(redis.call('HGET', KEYS[9], ARGV[1])) then
    return {'blocked'}
  end
  changed = redis.call('ZADD', KEYS[3], 'NX', ARGV[4], ARGV[2])
else
  changed = redis.call('ZREM', KEYS[3], ARGV[2])
end
if changed == 0 then
  return {0, {}, {}}
end
-- A chain step drawn earlier (account deletion's undo, or a change left by a
-- previous version for the sweeper) must not undo this one: both sides'
-- sequences move to a newly drawn op number.
local seq = string.format('%d', redis.call('INCR', KEYS[13]) * tonumber(ARGV[9]) + tonumber(ARGV[10]))
local step = follow and 1 or -1
redis.call('HSET', KEYS[4], ARGV[2], seq, 'c:' .. ARGV[2], seq)
redis.call('HINCRBY', KEYS[2], 'following', step)
redis.call('HSET', KEYS[8], ARGV[1], seq)
local theirs
if follow then
  theirs = redis.call('ZADD', KEYS[7], 'NX', ARGV[4], ARGV[1])
else
  theirs = redis.call('ZREM', KEYS[7], ARGV[1])
end
-- Counters move with their sets, so they stay equal to the sets' sizes.
if theirs == 1 then
  redis.call('HINCRBY', KEYS[1], 'followers', step)
end
local copied = {}
local cap = tonumber(ARGV[5])
if follow then
  if not muted then
    local newest = redis.call('ZREVRANGE', KEYS[10], 0, cap - 1, 'WITHSCORES')
    if #newest > 0 then
      local pairs = {}
      for i = 1, #newest, 2 do
        pairs[#pairs + 1] = newest[i + 1]
        pairs[#pairs + 1] = newest[i]
        copied[#copied + 1] = newest[i]
      end
      redis.call('ZADD', KEYS[6], unpack(pairs))
      redis.call('ZREMRANGEBYRANK', KEYS[6], 0, -cap - 1)
    end
  end
else
  local gone = redis.call('ZREVRANGE', KEYS[10], 0, cap - 1)
  for _, id in ipairs(redis.call('ZREVRANGE', KEYS[11], 0, cap - 1)) do
    gone[#gone + 1] = id
  end
  if #gone > 0 then
    redis.call('ZREM', KEYS[6], unpack(gone))
  end
end
local eid = redis.call('XADD', KEYS[12], 'MAXLEN', '~', ARGV[6], '*', 'e', ARGV[8])
redis.call('PUBLISH', ARGV[7], '{"id":"' .. eid .. '",' .. ARGV[8]:sub(2))
return {1, hidden, copied}
