-- emit_once: emits the events of partitioned outbox ops (store::outbox),
-- each op's once: only the call that marks an op appends its events, so a
-- rerun of the op's chain (a worker finishing a dead request's write)
-- announces nothing twice. The mark lives until the sweeper forgets it, a
-- while after `op_retire.lua` retired the op in its partition (and queued
-- its fan-out tasks there). One call carries the ops of every write of the
-- process that reached this step while the previous call was under way
-- (store::emitter), appends their events as one buffer entry (field `e` once
-- per event, in order; the first event's id is the entry's, the n-th after
-- it `<entry>.<n>`: store::events) and publishes them in one message, one
-- JSON a line (the hub splits it). The marks of a batch of three or more ops are
-- read in one HMGET and set in one HSET, two commands for the batch; one or
-- two ops take an HSETNX each, which is no more. An op named twice in a
-- batch is emitted by its first mention.
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
local ops, at = {}, {}
local i = 3
while i <= #ARGV do
  ops[#ops + 1] = ARGV[i]
  at[#at + 1] = i
  i = i + 2 + tonumber(ARGV[i + 1])
end
if #ops == 0 then
  return {}
end
local fresh = {}
if #ops <= 2 then
  for n, op in ipairs(ops) do
    fresh[n] = redis.call('HSETNX', KEYS[1], op, 1) == 1
  end
else
  local marked = redis.call('HMGET', KEYS[1], unpack(ops))
  local marks, seen = {}, {}
  for n, op in ipairs(ops) do
    fresh[n] = not marked[n] and not seen[op]
    if fresh[n] then
      seen[op] = true
      marks[#marks + 1] = op
      marks[#marks + 1] = 1
    end
  end
  if #marks > 0 then
    redis.call('HSET', KEYS[1], unpack(marks))
  end
end
local fields = {}
for n in ipairs(ops) do
  if fresh[n] then
    local j = at[n]
    for k = j + 2, j + 1 + tonumber(ARGV[j + 1]) do
      fields[#fields + 1] = 'e'
      fields[#fields + 1] = ARGV[k]
    end
  end
end
local entry = ''
if #fields > 0 then
  entry = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', unpack(fields))
end
local firsts, published = {}, {}
for n in ipairs(ops) do
  local first = ''
  if fresh[n] then
    local j = at[n]
    for k = j + 2, j + 1 + tonumber(ARGV[j + 1]) do
      local eid = entry
      if #published > 0 then eid = entry .. '.' .. #published end
      if first == '' then first = eid end
      published[#published + 1] = '{"id":"' .. eid .. '",' .. ARGV[k]:sub(2)
    end
  end
  firsts[#firsts + 1] = first
end
if #published > 0 then
  redis.call('PUBLISH', ARGV[2], table.concat(published, '\n'))
end
return firsts
