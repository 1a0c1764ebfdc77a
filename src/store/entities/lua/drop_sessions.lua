-- drop_sessions: the last step of ending sessions (`session_end.lua` ended
-- them at their authority, then their entries left the clean-up's index):
-- their revocations are announced.
--
-- Atomic per call: the revocations are appended to the event log as one
-- entry and published with the ids they got there (`log_append`), so a
-- process whose subscription was down when it happened still applies them
-- when it catches up from the buffer. One slot: the log's shard of events
-- of no one (`keys::log_shard(0)`), its buffer, marks and channel.
--
-- KEYS[1] the shard's events STREAM  KEYS[2] its marks HASH
-- ARGV[1] channel  ARGV[2] trim (`~N` or `=N`)  ARGV[3] PUBLISH or SPUBLISH  ARGV[4] the
-- shard's number  ARGV[5..] session ids
-- Returns the number of revocations announced.
local bodies = {}
for i = 5, #ARGV do
  bodies[#bodies + 1] = '{"type":"session_revoked","sid":"' .. ARGV[i] .. '"}'
end
if #bodies > 0 then
  log_append(KEYS[1], KEYS[2], ARGV[2], ARGV[1], ARGV[3], tonumber(ARGV[4]), bodies)
end
return #bodies
