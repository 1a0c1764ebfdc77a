-- drop_sessions: the last step of ending sessions (`session_end.lua` ended
-- them at their authority, then their entries left the clean-up's index):
-- their revocations are announced.
--
-- Atomic per call: each revocation is appended to the event buffer and
-- published with the id it got there, so a process whose subscription was
-- down when it happened still applies it when it catches up from the
-- buffer. One slot: the event buffer, a global `{g}` key.
--
-- KEYS[1] events STREAM
-- ARGV[1] channel  ARGV[2] MAXLEN  ARGV[3..] session ids
-- Returns the number of revocations announced.
for i = 3, #ARGV do
  local body = '{"type":"session_revoked","sid":"' .. ARGV[i] .. '"}'
  local eid = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'e', body)
  redis.call('PUBLISH', ARGV[1], '{"id":"' .. eid .. '",' .. body:sub(2))
end
return #ARGV - 2
