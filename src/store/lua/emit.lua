-- emit: appends one event to the replay buffer and publishes it.
--
-- Atomic so that the published JSON always carries the id the event got in
-- the buffer, and no subscriber can see an event that resume cannot replay.
--
-- KEYS[1] events STREAM
-- ARGV[1] replay MAXLEN  ARGV[2] channel  ARGV[3] event body JSON without "id"
-- Returns the event id.
local eid = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[3])
redis.call('PUBLISH', ARGV[2], '{"id":"' .. eid .. '",' .. ARGV[3]:sub(2))
return eid
