-- like_whole: a like or unlike, every step of it, on one Redis (not a
-- cluster, where the same change is a chain of single-slot steps: like.lua
-- and op_finish.lua, driven from the outbox).
--
-- Atomic: one script changes the likers, the status's count, the user's
-- list of likes and emits the event, so there is nothing to finish after a
-- crash and no outbox entry. Not one slot: it names keys of the status,
-- the user and `{g}`, which only a single Redis allows (Store::set_like
-- runs it only there).
--
-- KEYS[1] status HASH  KEYS[2] likers ZSET  KEYS[3] like sequences HASH
-- KEYS[4] the user's likes ZSET  KEYS[5] events STREAM  KEYS[6] the op
-- counter of the like's outbox partition (store::outbox)
-- ARGV[1] user id  ARGV[2] status id  ARGV[3] now  ARGV[4] "1" like / "0" unlike
-- ARGV[5] MAXLEN  ARGV[6] channel  ARGV[7] the like event JSON without "id"
-- ARGV[8] stride, ARGV[9] offset: an op number is counter * stride + offset
-- (op_begin.lua)
-- Returns {changed 0/1, likes} or {"missing"}.
local st = redis.call('HMGET', KEYS[1], 'id', 'deleted', 'likes')
if not st[1] or st[2] then
  return {'missing'}
end
local changed
if ARGV[4] == '1' then
  changed = redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
else
  changed = redis.call('ZREM', KEYS[2], ARGV[1])
end
if changed == 0 then
  return {0, tonumber(st[3] or '0')}
end
-- A chain step drawn earlier (account deletion's undo, or a write left by
-- a previous version for the sweeper) must not undo this change: the
-- user's sequence moves to the newest op number drawn in the partition.
local drawn = redis.call('GET', KEYS[6])
local seq = '0'
if drawn then
  seq = string.format('%d', tonumber(drawn) * tonumber(ARGV[8]) + tonumber(ARGV[9]))
end
redis.call('HSET', KEYS[3], ARGV[1], seq)
local likes = redis.call('HINCRBY', KEYS[1], 'likes', ARGV[4] == '1' and 1 or -1)
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[4], ARGV[3], ARGV[2])
  local eid = redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[5], '*', 'e', ARGV[7])
  redis.call('PUBLISH', ARGV[6], '{"id":"' .. eid .. '",' .. ARGV[7]:sub(2))
else
  redis.call('ZREM', KEYS[4], ARGV[2])
end
return {1, likes}
