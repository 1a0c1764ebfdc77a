-- drop_sessions: removes sessions with all their keys.
--
-- Atomic per call: for each session the check "still idle past the cutoff"
-- and the removal of its `sessions` field, `recent` entry and viewed ZSET run
-- with no request in between, so a session used at this very moment (its
-- `recent` score just raised) is not dropped by the idle sweep. The
-- revocation is appended to the event buffer as well as published, in the
-- same step, so a process whose subscription was down when it happened
-- still applies it when it catches up from the buffer.
--
-- Keys: global only (sessions, recent, the event buffer) plus each
-- session's viewed ZSET.
--
-- KEYS[1] sessions HASH  KEYS[2] recent ZSET  KEYS[3] events STREAM
-- ARGV[1] cutoff score (drop only if last seen <= cutoff; "+inf" drops all)
-- ARGV[2] viewed key prefix  ARGV[3] channel  ARGV[4] MAXLEN
-- ARGV[5..] session ids
-- Returns the number of sessions dropped.
local n = 0
for i = 5, #ARGV do
  local sid = ARGV[i]
  local seen = redis.call('ZSCORE', KEYS[2], sid)
  if ARGV[1] == '+inf' or (not seen) or tonumber(seen) <= tonumber(ARGV[1]) then
    redis.call('HDEL', KEYS[1], sid)
    redis.call('ZREM', KEYS[2], sid)
    redis.call('DEL', ARGV[2] .. sid)
    local body = '{"type":"session_revoked","sid":"' .. sid .. '"}'
    local eid = redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'e', body)
    redis.call('PUBLISH', ARGV[3], '{"id":"' .. eid .. '",' .. body:sub(2))
    n = n + 1
  end
end
return n
