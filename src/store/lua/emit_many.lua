-- emit_many: appends several events as one buffer entry (field `e` once per
-- event, in order; the first event's id is the entry's, the n-th after it
-- `<entry>.<n>`: store::events) and publishes them in one message, one JSON
-- a line (the hub splits it). The notifier's batches go out this way.
--
-- Atomic so that every published JSON carries the id its event got in the
-- buffer, and no subscriber sees an event resume cannot replay. One slot:
-- {g}.
--
-- KEYS[1] events STREAM
-- ARGV[1] MAXLEN  ARGV[2] channel  ARGV[3..] event bodies (JSON without "id")
-- Returns the entry's id.
local fields = {}
for k = 3, #ARGV do
  fields[#fields + 1] = 'e'
  fields[#fields + 1] = ARGV[k]
end
local entry = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', unpack(fields))
local published = {}
for k = 3, #ARGV do
  local eid = entry
  if #published > 0 then eid = entry .. '.' .. #published end
  published[#published + 1] = '{"id":"' .. eid .. '",' .. ARGV[k]:sub(2)
end
redis.call('PUBLISH', ARGV[2], table.concat(published, '\n'))
return entry
