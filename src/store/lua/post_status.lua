-- post_status: stores a status, puts it on the author's profile and home
-- timelines, recounts the author's posts, emits the status event and records
-- the fan-out still owed in the outbox.
--
-- Atomic: readers never see the status without its event or the counter out
-- of step with the profile timeline, because the counter is recomputed as
-- ZCARD of the profile inside the same script; and a stored status always
-- has its fan-out recorded, so a client hanging up or the process dying
-- after this script leaves the work in Redis (the outbox entry, finished by
-- the request or later by a worker), never nothing. The status id was taken
-- by INCR before the call, so a retry after a lost reply is harmless: the
-- HSETNX guard makes the second run a no-op that returns the first event id.
-- With an Idempotency-Key, a key already used returns the first answer and
-- creates nothing.
--
-- Keys: the status, the author's user keys (one slot), the global event
-- buffer and outbox. On Redis Cluster this is to become per-slot steps.
--
-- The indices a status enters go with it in the same step: the parent's
-- replies (and its `replies` count, the ZCARD), each mentioned user's
-- mentions timeline (with a `mention` event each), each hashtag's timeline,
-- and (for public statuses) the trending bucket of its minute.
--
-- KEYS[1] status HASH  KEYS[2] author's user HASH  KEYS[3] profile ZSET
-- KEYS[4] home ZSET    KEYS[5] events STREAM       KEYS[6] outbox ZSET
-- KEYS[7] idempotency STRING (or the user HASH again when there is no key)
-- KEYS[8] parent status HASH  KEYS[9] parent's replies ZSET (both the user
-- HASH again when not a reply)  KEYS[10] trending bucket ZSET
-- KEYS[11 .. 10+m] mentions ZSETs  KEYS[11+m ..] hashtag ZSETs
-- ARGV[1] status id  ARGV[2] posted  ARGV[3] home cap  ARGV[4] MAXLEN
-- ARGV[5] channel    ARGV[6] event body JSON without "id"
-- ARGV[7] outbox op  ARGV[8] outbox lease deadline
-- ARGV[9] "1" when KEYS[7] is an idempotency key  ARGV[10] its TTL (s)
-- ARGV[11] the answer (status JSON) kept under the idempotency key
-- ARGV[12] JSON {reply: bool, mention_events: [body], tags: [tag],
--   trend: bool, trend_ttl: s, cap: n, repost: bool, repost_event: body,
--   uid: the author's id}
-- For a repost, KEYS[11+m+t] the original's HASH and KEYS[12+m+t] its
-- reposters HASH (user id -> repost id): a user reposts a status once (a
-- second repost returns {"reposted", id}), the original's `reposts` count
-- is the HLEN, and the original's author gets a `repost` event.
-- ARGV[13..] field, value pairs of the status HASH
-- Returns {event id, posts}, {"dup", first answer}, {"reposted", id} or
-- {"nouser"}.
local idem = ARGV[9] == '1'
if idem then
  local first = redis.call('GET', KEYS[7])
  if first then
    return {'dup', first}
  end
end
local x = cjson.decode(ARGV[12])
local m = #x.mention_events
local rk = 10 + m + #x.tags
if x.repost then
  -- The mapping goes with the repost's delete, so a mapped repost exists.
  local existing = redis.call('HGET', KEYS[rk + 2], x.uid)
  if existing then
    return {'reposted', existing}
  end
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {'nouser'}
end
if redis.call('HSETNX', KEYS[1], 'id', ARGV[1]) == 0 then
  return {redis.call('HGET', KEYS[1], 'event') or '', redis.call('ZCARD', KEYS[3])}
end
local fields = {}
for i = 13, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[3]) - 1)
local posts = redis.call('ZCARD', KEYS[3])
redis.call('HSET', KEYS[2], 'posts', posts)
local eid = redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[6])
redis.call('HSET', KEYS[1], 'event', eid)
redis.call('PUBLISH', ARGV[5], '{"id":"' .. eid .. '",' .. ARGV[6]:sub(2))
redis.call('ZADD', KEYS[6], ARGV[8], ARGV[7])
if x.reply then
  redis.call('ZADD', KEYS[9], ARGV[2], ARGV[1])
  if redis.call('EXISTS', KEYS[8]) == 1 then
    redis.call('HSET', KEYS[8], 'replies', redis.call('ZCARD', KEYS[9]))
  end
end
for i = 1, m do
  redis.call('ZADD', KEYS[10 + i], ARGV[2], ARGV[1])
  redis.call('ZREMRANGEBYRANK', KEYS[10 + i], 0, -x.cap - 1)
  local body = x.mention_events[i]
  local mid = redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[4], '*', 'e', body)
  redis.call('PUBLISH', ARGV[5], '{"id":"' .. mid .. '",' .. body:sub(2))
end
for i = 1, #x.tags do
  redis.call('ZADD', KEYS[10 + m + i], ARGV[2], ARGV[1])
  redis.call('ZREMRANGEBYRANK', KEYS[10 + m + i], 0, -x.cap - 1)
  if x.trend then
    redis.call('ZINCRBY', KEYS[10], 1, x.tags[i])
  end
end
if x.repost then
  redis.call('HSET', KEYS[rk + 2], x.uid, ARGV[1])
  redis.call('HSET', KEYS[rk + 1], 'reposts', redis.call('HLEN', KEYS[rk + 2]))
  local body = x.repost_event
  local rid = redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[4], '*', 'e', body)
  redis.call('PUBLISH', ARGV[5], '{"id":"' .. rid .. '",' .. body:sub(2))
end
if x.trend and #x.tags > 0 then
  redis.call('EXPIRE', KEYS[10], x.trend_ttl)
  redis.call('HSET', KEYS[1], 'trended', '1')
end
if idem then
  redis.call('SET', KEYS[7], ARGV[11], 'EX', ARGV[10])
end
return {eid, posts}
