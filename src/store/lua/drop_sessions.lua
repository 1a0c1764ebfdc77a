-- drop_sessions: removes sessions with all their keys.
--
-- Atomic per call: for each session the check "still idle past the cutoff"
-- and the removal of its `sessions` field, `recent` entry and viewed ZSET run
-- with no request in between, so a session used at this very moment (its
-- `recent` score just raised) is not dropped by the idle sweep.
--
-- KEYS[1] sessions HASH  KEYS[2] recent ZSET
-- ARGV[1] cutoff score (drop only if last seen <= cutoff; "+inf" drops all)
-- ARGV[2] viewed key prefix  ARGV[3] channel  ARGV[4..] session ids
-- Returns the number of sessions dropped.
local n = 0
for i = 4, #ARGV do
  local sid = ARGV[i]
  local seen = redis.call('ZSCORE', KEYS[2], sid)
  if ARGV[1] == '+inf' or (not seen) or tonumber(seen) <= tonumber(ARGV[1]) then
    redis.call('HDEL', KEYS[1], sid)
    redis.call('ZREM', KEYS[2], sid)
    redis.call('DEL', ARGV[2] .. sid)
    redis.call('PUBLISH', ARGV[3], '{"type":"session_revoked","sid":"' .. sid .. '"}')
    n = n + 1
  end
end
return n
