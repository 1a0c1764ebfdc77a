-- drop_sessions: the second step of ending sessions (`session_end.lua`
-- ended them at their authority): their index entries go and their
-- revocations are announced.
--
-- Atomic per call: the index entries and the revocation go together. The
-- revocation is appended to the event buffer as well as published, so a
-- process whose subscription was down when it happened still applies it
-- when it catches up from the buffer. One slot: every key is a global `{g}`
-- key.
--
-- KEYS[1] sessions HASH  KEYS[2] recent ZSET  KEYS[3] events STREAM
-- ARGV[1] channel  ARGV[2] MAXLEN  ARGV[3..] session ids
-- Returns the number of index entries removed.
local n = 0
for i = 3, #ARGV do
  local sid = ARGV[i]
  n = n + redis.call('HDEL', KEYS[1], sid)
  redis.call('ZREM', KEYS[2], sid)
  local body = '{"type":"session_revoked","sid":"' .. sid .. '"}'
  local eid = redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'e', body)
  redis.call('PUBLISH', ARGV[1], '{"id":"' .. eid .. '",' .. body:sub(2))
end
return n
