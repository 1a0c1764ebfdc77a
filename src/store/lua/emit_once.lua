-- emit_once: emits the events of a partitioned outbox op (store::outbox),
-- once: only the call that sets the op's mark appends them, so a rerun of
-- the op's chain (a worker finishing a dead request's write) announces
-- nothing twice. The mark lives until the sweeper forgets it, a while after
-- `op_retire.lua` retired the op in its partition (and queued its fan-out
-- tasks there).
--
-- Atomic: the mark, the appends and the publishes happen together, and
-- each published JSON carries the id its event got in the buffer. One
-- slot: every key is a global `{g}` key.
--
-- KEYS[1] emitted HASH (op number -> 1)  KEYS[2] events STREAM
-- ARGV[1] op number  ARGV[2] MAXLEN  ARGV[3] channel
-- ARGV[4 ..] event bodies, JSON without "id"
-- Returns the first event's id, or "" when the op's events went out before
-- (or it has none).
if redis.call('HSETNX', KEYS[1], ARGV[1], 1) == 0 then
  return ''
end
local first = ''
for i = 4, #ARGV do
  local body = ARGV[i]
  local eid = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'e', body)
  if first == '' then first = eid end
  redis.call('PUBLISH', ARGV[3], '{"id":"' .. eid .. '",' .. body:sub(2))
end
return first
