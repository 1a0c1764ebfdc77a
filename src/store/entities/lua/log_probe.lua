-- log_probe: how far shards of the event log are: their node's time, and
-- each shard's count of entries (`~n` of its marks, counted by
-- `log_append`). Sent on the connection the shards' messages come by, so
-- that its answer follows every message its node sent before it: the hub's
-- merge then knows every shard is past the time (store::events::merge), or
-- that it missed a message of a shard whose newest it never heard.
--
-- Atomic: the time and the reads are one moment. One slot on a cluster
-- (one shard's marks); every shard at once on one Redis. Writes nothing.
--
-- KEYS the shards' marks HASHes
-- Returns {ms, µs * 1024, each shard's count of entries ("" for none)}.
local t = redis.call('TIME')
local us = tonumber(t[2])
local reply = {tonumber(t[1]) * 1000 + math.floor(us / 1000), (us % 1000) * 1024}
for _, key in ipairs(KEYS) do
  reply[#reply + 1] = redis.call('HGET', key, '~n') or ''
end
return reply
