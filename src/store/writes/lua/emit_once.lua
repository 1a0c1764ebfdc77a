-- emit_once: emits the events that fall in one shard of the event log
-- (store::keys::log_shard) for partitioned outbox ops (store::outbox), each
-- op's once: only the call that marks an op in this shard appends its
-- events here, so a rerun of the op's chain (a worker finishing a dead
-- request's write) announces nothing twice. The mark lives until the
-- sweeper forgets it, a while after `op_retire.lua` retired the op in its
-- partition. One call carries the ops of every write of the process that
-- reached this step for this shard while the previous call was under way
-- (store::emitter), appends their events as one buffer entry (field `e`
-- once per event, in order; the first event's id is the entry's, the n-th
-- after it `<entry>.<n>`: store::events) and publishes them in one message,
-- one JSON a line after a first line `~<floor>` (the hub splits it).
--
-- The entry's id and the floor line are `log_append`'s (prepended).
--
-- Atomic: the marks, the append and the publish happen together, and each
-- published JSON carries the id its event got in the buffer. One slot:
-- every key is the shard's `{e<j>}`, and so is its channel.
--
-- KEYS[1] emitted HASH (op number -> 1)  KEYS[2] events STREAM
-- ARGV[1] trim (`~N` or `=N`)  ARGV[2] channel  ARGV[3] PUBLISH or SPUBLISH  ARGV[4] the
-- shard's number  ARGV[5] an id the entry must follow ('' none: `log_append`);
-- then per op: its number, e, the number of its events, and the e event
-- bodies (JSON without "id")
-- Returns per op the id of its first event here, or "" when its events
-- went out before (or it has none here). An op numbered "-" is no op: its
-- events are appended with no mark (the notifier's, a moderator's).
local ops, at = {}, {}
local i = 6
while i <= #ARGV do
  ops[#ops + 1] = ARGV[i]
  at[#at + 1] = i
  i = i + 2 + tonumber(ARGV[i + 1])
end
if #ops == 0 then
  return {}
end
local fresh = {}
if #ops == 1 and ops[1] == '-' then
  fresh[1] = true
elseif #ops <= 2 then
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
local bodies = {}
for n in ipairs(ops) do
  if fresh[n] then
    local j = at[n]
    for k = j + 2, j + 1 + tonumber(ARGV[j + 1]) do
      bodies[#bodies + 1] = ARGV[k]
    end
  end
end
local firsts = {}
local entry = ''
if #bodies > 0 then
  entry = log_append(KEYS[2], KEYS[1], ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), bodies, ARGV[5])
end
local count = 0
for n in ipairs(ops) do
  local first = ''
  local e = tonumber(ARGV[at[n] + 1])
  if fresh[n] and e > 0 then
    if count == 0 then first = entry else first = entry .. '.' .. count end
    count = count + e
  end
  firsts[#firsts + 1] = first
end
return firsts
