-- work_marks: for each shard of the event log, its newest entry and how far
-- a piece of work that follows the log shard by shard (the notifier:
-- store::events::shard_work) has worked it, so that a reader can wait until
-- the work has passed what the shards held when it asked.
--
-- Atomic: reads only, at one moment. One slot on a cluster (one shard's
-- stream and marks: `{e<k>}`); every shard at once on one Redis.
--
-- KEYS pairs: a shard's events STREAM, its marks HASH
-- ARGV[1] the position's field (`~p:<work>`)
-- Returns per shard its newest entry's id and the work's position ("" for
-- none).
local reply = {}
for i = 1, #KEYS, 2 do
  local newest = redis.call('XREVRANGE', KEYS[i], '+', '-', 'COUNT', 1)[1]
  reply[#reply + 1] = newest and newest[1] or ''
  reply[#reply + 1] = redis.call('HGET', KEYS[i + 1], ARGV[1]) or ''
end
return reply
