-- post_status: stores a status, puts it on the author's profile and home
-- timelines, recounts the author's posts and emits the status event.
--
-- Atomic: readers never see the status without its event or the counter out
-- of step with the profile timeline, because the counter is recomputed as
-- ZCARD of the profile inside the same script. The status id was taken by
-- INCR before the call, so a retry after a lost reply is harmless: the
-- HSETNX guard makes the second run a no-op that returns the first event id.
--
-- KEYS[1] status HASH  KEYS[2] author's user HASH  KEYS[3] profile ZSET
-- KEYS[4] home ZSET    KEYS[5] events STREAM
-- ARGV[1] status id  ARGV[2] posted  ARGV[3] home cap  ARGV[4] MAXLEN
-- ARGV[5] channel    ARGV[6] event body JSON without "id"
-- ARGV[7..] field, value pairs of the status HASH
-- Returns {event id, posts} or {"nouser"}.
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {'nouser'}
end
if redis.call('HSETNX', KEYS[1], 'id', ARGV[1]) == 0 then
  return {redis.call('HGET', KEYS[1], 'event') or '', redis.call('ZCARD', KEYS[3])}
end
local fields = {}
for i = 7, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[3]) - 1)
local posts = redis.call('ZCARD', KEYS[3])
redis.call('HSET', KEYS[2], 'posts', posts)
local eid = redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[6])
redis.call('HSET', KEYS[1], 'event', eid)
redis.call('PUBLISH', ARGV[5], '{"id":"' .. eid .. '",' .. ARGV[6]:sub(2))
return {eid, posts}
