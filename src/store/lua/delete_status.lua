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
-- Returns {"ok", event id, posts}, {"missing"} or {"forbidden"}.
local owner = redis.call('HGET', KEYS[1], 'uid')
if not owner then
  return {'missing'}
end
if owner ~= ARGV[2] then
  return {'forbidden'}
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[7], ARGV[8], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[7], 0, -tonumber(ARGV[9]) - 1)
local posts = redis.call('ZCARD', KEYS[3])
redis.call('HSET', KEYS[2], 'posts', posts)
local eid = redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[3], '*', 'e', ARGV[5])
redis.call('PUBLISH', ARGV[4], '{"id":"' .. eid .. '",' .. ARGV[5]:sub(2))
redis.call('ZADD', KEYS[6], ARGV[7], ARGV[6])
return {'ok', eid, posts}
