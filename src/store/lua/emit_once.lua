-- emit_once: emits the events of a partitioned outbox op (store::outbox)
-- and queues its fan-out tasks, once: only the call that sets the op's mark
-- appends them, so a rerun of the op's chain (a worker finishing a dead
-- request's write) announces and queues nothing twice. The mark lives
-- until the sweeper forgets it, a while after `op_retire.lua` retired the
-- op in its partition.
--
-- Atomic: the mark, the appends and the publishes happen together, and
-- each published JSON carries the id its event got in the buffer. One
-- slot: every key is a global `{g}` key.
--
-- KEYS[1] emitted HASH (op number -> 1)  KEYS[2] events STREAM
-- KEYS[3] fan-out STREAM
-- ARGV[1] op number  ARGV[2] MAXLEN  ARGV[3] channel  ARGV[4] e, the number
-- of events  ARGV[5 .. 4+e] event bodies, JSON without "id"  then the
-- fan-out tasks
-- Returns the first event's id, or "" when the op's events went out before
-- (or it has none).
if redis.call('HSETNX', KEYS[1], ARGV[1], 1) == 0 then
  return ''
end
local e = tonumber(ARGV[4])
local first = ''
for i = 5, 4 + e do
  local body = ARGV[i]
  local eid = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'e', body)
  if first == '' then first = eid end
  redis.call('PUBLISH', ARGV[3], '{"id":"' .. eid .. '",' .. body:sub(2))
end
for i = 5 + e, #ARGV do
  redis.call('XADD', KEYS[3], '*', 't', ARGV[i])
end
return first
