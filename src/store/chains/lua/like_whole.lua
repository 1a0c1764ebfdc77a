-- like_whole: a like or unlike, every step of it, on one Redis (not a
-- cluster, where the same change is a chain of single-slot steps: like.lua
-- emit_once.lua and op_retire.lua, driven from the outbox).
--
-- Atomic: one script changes the likers, the status's count, the user's
-- list of likes and emits the event, so there is nothing to finish after a
-- crash and no outbox entry. Not one slot: it names keys of the status,
-- the user and `{g}`, which only a single Redis allows (Likes::set
-- runs it only there, and every like change on one Redis goes through it,
-- an account deletion's too: no chain step of a like is drawn there, so
-- the like's sequence that orders chain steps is neither read nor written
-- here).
--
-- KEYS[1] status HASH  KEYS[2] likers ZSET  KEYS[3] the user's likes ZSET
-- KEYS[4] the liker's shard of the event log STREAM (`log_append`)
-- ARGV[1] user id  ARGV[2] status id  ARGV[3] now  ARGV[4] "1" like / "0" unlike
-- ARGV[5] trim (`~N` or `=N`)  ARGV[6] channel  ARGV[7] the like event JSON without "id"
-- ARGV[8] the unlike event JSON (for the notifier) without "id"
-- ARGV[9] PUBLISH or SPUBLISH  ARGV[10] the shard's number
-- Returns {changed 0/1, likes} or {"missing"}.
-- The shard's marks HASH beside its buffer (one Redis: any key may be named).
local marks = KEYS[4]:gsub('events$', 'emitted')
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
local likes = redis.call('HINCRBY', KEYS[1], 'likes', ARGV[4] == '1' and 1 or -1)
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
  log_append(KEYS[4], marks, ARGV[5], ARGV[6], ARGV[9], tonumber(ARGV[10]), {ARGV[7]})
else
  redis.call('ZREM', KEYS[3], ARGV[2])
  log_append(KEYS[4], marks, ARGV[5], ARGV[6], ARGV[9], tonumber(ARGV[10]), {ARGV[8]})
end
return {1, likes}
