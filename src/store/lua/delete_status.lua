-- delete_status: removes a status, its profile and home entries, recounts the
-- author's posts, emits the delete event and records the fan-out (removal
-- from the followers' homes) still owed in the outbox.
--
-- Atomic: the ownership check and the removal happen with nothing in between,
-- so two concurrent deletes cannot both succeed (the seed's lock-then-check
-- race), the posts counter is recomputed from the profile ZSET, and a delete
-- that happened always has its fan-out recorded.
--
-- Keys: the status, the author's user keys (one slot), the global event
-- buffer and outbox.
--
-- The id also goes to the author's recently-deleted ZSET in the same step, so
-- an unfollow that reads the profile after this delete (and that the
-- delete's fan-out no longer reaches) still takes it out of the home.
--
-- KEYS[1] status HASH  KEYS[2] author's user HASH  KEYS[3] profile ZSET
-- KEYS[4] home ZSET    KEYS[5] events STREAM       KEYS[6] outbox ZSET
-- KEYS[7] author's recently-deleted ZSET
-- ARGV[1] status id  ARGV[2] requesting uid  ARGV[3] MAXLEN  ARGV[4] channel
-- ARGV[5] event body JSON without "id"  ARGV[6] outbox op  ARGV[7] lease deadline
-- ARGV[8] now  ARGV[9] how many recent deletes to keep
-- KEYS[8] parent status HASH  KEYS[9] parent's replies ZSET (the user HASH
-- when not a reply)  KEYS[10] the trending bucket of its minute
-- KEYS[11] its likers ZSET  KEYS[12 .. 11+m] mentions ZSETs
-- KEYS[12+m ..] hashtag ZSETs
-- ARGV[10] JSON {reply: bool, m: number of mentions ZSETs, tags: [tag],
--   repost: bool}; for a repost, KEYS[12+m+t] the original's HASH and
--   KEYS[13+m+t] its reposters HASH (the mapping goes, `reposts` recounted)
--
-- The indices it entered when posted lose it in the same step: the parent's
-- replies (recounted), mentions and hashtag timelines, the trending bucket
-- (if it was counted there) and its likers (whose own liked lists the caller
-- then updates; a list read before that drops the gone id itself).
-- Returns {"ok", event id, posts, liker ids...} (the caller takes the
-- status out of each liker's likes list), {"missing"} or {"forbidden"}.
local owner = redis.call('HGET', KEYS[1], 'uid')
if not owner then
  return {'missing'}
end
if owner ~= ARGV[2] then
  return {'forbidden'}
end
local trended = redis.call('HGET', KEYS[1], 'trended')
redis.call('DEL', KEYS[1])
local x = cjson.decode(ARGV[10])
if x.reply then
  redis.call('ZREM', KEYS[9], ARGV[1])
  if redis.call('EXISTS', KEYS[8]) == 1 then
    redis.call('HSET', KEYS[8], 'replies', redis.call('ZCARD', KEYS[9]))
  end
end
local likers = redis.call('ZRANGE', KEYS[11], 0, -1)
redis.call('DEL', KEYS[11])
for i = 1, x.m do
  redis.call('ZREM', KEYS[11 + i], ARGV[1])
end
if x.repost then
  local rk = 11 + x.m + #x.tags
  if redis.call('HGET', KEYS[rk + 2], ARGV[2]) == ARGV[1] then
    redis.call('HDEL', KEYS[rk + 2], ARGV[2])
  end
  if redis.call('EXISTS', KEYS[rk + 1]) == 1 then
    redis.call('HSET', KEYS[rk + 1], 'reposts', redis.call('HLEN', KEYS[rk + 2]))
  end
end
for i = 1, #x.tags do
  redis.call('ZREM', KEYS[11 + x.m + i], ARGV[1])
  if trended then
    if tonumber(redis.call('ZINCRBY', KEYS[10], -1, x.tags[i])) <= 0 then
      redis.call('ZREM', KEYS[10], x.tags[i])
    end
  end
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[7], ARGV[8], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[7], 0, -tonumber(ARGV[9]) - 1)
local posts = redis.call('ZCARD', KEYS[3])
redis.call('HSET', KEYS[2], 'posts', posts)
local eid = redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[3], '*', 'e', ARGV[5])
redis.call('PUBLISH', ARGV[4], '{"id":"' .. eid .. '",' .. ARGV[5]:sub(2))
redis.call('ZADD', KEYS[6], ARGV[7], ARGV[6])
local reply = {'ok', eid, posts}
for _, liker in ipairs(likers) do reply[#reply + 1] = liker end
return reply
