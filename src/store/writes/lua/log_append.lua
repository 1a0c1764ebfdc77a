-- log_append: prepended to every script that emits events
-- (store::plumbing::scripts), so that the event log's ids and floors are
-- made in one place. Appends `bodies` (event JSON without "id") to one
-- shard of the log as one buffer entry (field `e` once per event, in
-- order; the first event's id is the entry's, the n-th after it
-- `<entry>.<n>`: store::events) and publishes them in one message: a first
-- line `~<floor> <count>`, then one JSON a line, each with its id.
--
-- The entry's id is a position in the whole log, not only this shard:
-- `<ms>-<µs * 1024 + shard>` from this node's clock (TIME), so the ids of
-- every shard order by when their events were written, and no two shards
-- ever make the same id. An id at or before the shard's newest (a second
-- entry in one microsecond, or a clock set back) becomes the next
-- microsecond's after that newest. The floor says that every later entry on
-- this node has an id at or after `<ms>-<µs * 1024>`: what the hub's merge
-- waits for before it hands an event on. The shard's count of entries
-- (field `~n` of its marks HASH, one HINCRBY) follows the floor: a count
-- that is not one more than the last heard lets a subscriber see that it
-- missed a message (a connection lost and remade by the client).
--
-- `trim` is the shard's MAXLEN in entries after `~` (whole nodes of
-- entries: cheap) or `=` (exactly: a small buffer). `after` (optional, ''
-- for none) is an id the entry must follow: the entry of the same write's
-- events in another shard, so that a write's events keep their order on
-- every stream even when that shard's node has a clock behind this one's.
-- Returns the entry's id.
local function log_append(stream, marks, trim, channel, publish, shard, bodies, after)
  local how, maxlen = trim:sub(1, 1), trim:sub(2)
  local fields = {}
  for n, b in ipairs(bodies) do
    fields[2 * n - 1] = 'e'
    fields[2 * n] = b
  end
  local t = redis.call('TIME')
  local us = tonumber(t[2])
  local ms = tonumber(t[1]) * 1000 + math.floor(us / 1000)
  local tick = (us % 1000) * 1024
  local ems, eseq = ms, tick + shard
  local ams, aseq = string.match(after or '', '^(%d+)-(%d+)')
  if ams then
    ams, aseq = tonumber(ams), tonumber(aseq)
    if (ems < ams or (ems == ams and eseq <= aseq)) then
      ems, eseq = ams, (math.floor(aseq / 1024) + 1) * 1024 + shard
    end
  end
  local entry = string.format('%d-%d', ems, eseq)
  local added = redis.pcall('XADD', stream, 'MAXLEN', how, maxlen, entry, unpack(fields))
  if type(added) == 'table' and added.err then
    local info = redis.call('XINFO', 'STREAM', stream)
    local last = '0-0'
    for k = 1, #info, 2 do
      if info[k] == 'last-generated-id' then
        last = info[k + 1]
      end
    end
    local lms, lseq = string.match(last, '^(%d+)-(%d+)$')
    entry = string.format('%d-%d', tonumber(lms),
      (math.floor(tonumber(lseq) / 1024) + 1) * 1024 + shard)
    redis.call('XADD', stream, 'MAXLEN', how, maxlen, entry, unpack(fields))
  end
  local count = redis.call('HINCRBY', marks, '~n', 1)
  local lines = {string.format('~%d-%d %d', ms, tick, count)}
  for n, b in ipairs(bodies) do
    local eid = entry
    if n > 1 then eid = entry .. '.' .. (n - 1) end
    lines[#lines + 1] = '{"id":"' .. eid .. '",' .. b:sub(2)
  end
  redis.call(publish, channel, table.concat(lines, '\n'))
  return entry
end

