-- emit_once: emits the events of partitioned outbox ops (store::outbox),
-- each op's once: only the call that sets an op's mark appends its events,
-- so a rerun of the op's chain (a worker finishing a dead request's write)
-- announces nothing twice. The mark lives until the sweeper forgets it, a
-- while after `op_retire.lua` retired the op in its partition (and queued
-- its fan-out tasks there). One call carries the ops of every write of the
-- process that reached this step while the previous call was under way
-- (store::emitter), and publishes their events in one message, one JSON a
-- line (the hub splits it).
--
-- Atomic: the marks, the appends and the publish happen together, and each
-- published JSON carries the id its event got in the buffer. One slot:
-- every key is a global `{g}` key.
--
-- KEYS[1] emitted HASH (op number -> 1)  KEYS[2] events STREAM
-- ARGV[1] MAXLEN  ARGV[2] channel  then per op: its number, e, the number
-- of its events, and the e event bodies (JSON without "id")
-- Returns per op the id of its first event, or "" when its events went out
-- before (or it has none).
local firsts, published = {}, {}
local i = 3
while i <= #ARGV do
  local op, e = ARGV[i], tonumber(ARGV[i + 1])
  local first = ''
  if redis.call('HSETNX', KEYS[1], op, 1) == 1 then
    for j = i + 2, i + 1 + e do
      local body = ARGV[j]
      local eid = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'e', body)
      if first == '' then first = eid end
      published[#published + 1] = '{"id":"' .. eid .. '",' .. body:sub(2)
    end
  end
  firsts[#firsts + 1] = first
  i = i + 2 + e
end
if #published > 0 then
  redis.call('PUBLISH', ARGV[2], table.concat(published, '\n'))
end
return firsts
