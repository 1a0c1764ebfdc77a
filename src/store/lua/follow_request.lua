-- follow_request: records that a user asks to follow a private account.
--
-- Atomic: the incoming and outgoing request sets change together, and the
-- follow_request event is emitted only by the call that added the request,
-- so asking twice is idempotent and announced once.
--
-- Keys: the followee's incoming requests, the follower's outgoing requests,
-- the global event buffer.
--
-- KEYS[1] followee's requests ZSET  KEYS[2] follower's requested ZSET
-- KEYS[3] events STREAM
-- ARGV[1] follower id  ARGV[2] followee id  ARGV[3] now  ARGV[4] MAXLEN
-- ARGV[5] channel  ARGV[6] event body JSON without "id"
-- Returns 1 when the request is new, else 0.
local added = redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[2])
if added == 1 then
  local eid = redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[6])
  redis.call('PUBLISH', ARGV[5], '{"id":"' .. eid .. '",' .. ARGV[6]:sub(2))
end
return added
