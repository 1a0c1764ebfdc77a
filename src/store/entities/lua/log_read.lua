-- log_read: reads shards of the event log, with the time of their node at
-- that moment: one shard on a cluster, or every shard at once on one Redis
-- (where a script may name keys of any slot: one call instead of one a
-- shard).
--
-- Atomic: the time and the reads are one moment, so every entry a read
-- does not hold that has an id below `<ms>-<µs * 1024>` does not exist and
-- never will (`log_append` makes ids from this clock, never below it): the
-- merged read cuts every shard's events there (store::events::read). On a
-- cluster, one slot: the shard's buffer. Writes nothing.
--
-- KEYS the shards' events STREAMs
-- ARGV[1] "f" (XRANGE) or "b" (XREVRANGE)  ARGV[2] from  ARGV[3] to
-- ARGV[4] most entries a shard  ARGV[5] "i": also what each shard lost
-- Returns {ms, µs * 1024}, then per shard {entries}, with "i" {entries,
-- its oldest id held, "1" if ever trimmed, its newest id deleted}
-- (`log_lost`).
local t = redis.call('TIME')
local us = tonumber(t[2])
local reply = {tonumber(t[1]) * 1000 + math.floor(us / 1000), (us % 1000) * 1024}
for _, key in ipairs(KEYS) do
  local rows
  if ARGV[1] == 'f' then
    rows = redis.call('XRANGE', key, ARGV[2], ARGV[3], 'COUNT', ARGV[4])
  else
    rows = redis.call('XREVRANGE', key, ARGV[2], ARGV[3], 'COUNT', ARGV[4])
  end
  local shard = {rows}
  if ARGV[5] == 'i' then
    shard[2], shard[3], shard[4] = log_lost(key)
  end
  reply[#reply + 1] = shard
end
return reply
