-- zstd_dict_put: publishes a stream compression dictionary and makes it the
-- current one, keeping the newest few (a client that holds an older id can
-- still fetch it while frames made with it may be in flight).
--
-- Atomic: the dictionary, its place in the order and the current id change
-- together, so no reader sees a current id without its bytes. With ARGV[4]
-- = 1 it publishes only when there is no current one yet (the first
-- process to start wins; the rest adopt its dictionary). One slot: {g}.
--
-- KEYS[1] id -> bytes HASH  KEYS[2] ids LIST, newest first  KEYS[3] current id STRING
-- ARGV[1] id  ARGV[2] bytes  ARGV[3] how many to keep  ARGV[4] only if none
-- Returns the current id after the call.
if ARGV[4] == '1' then
  local current = redis.call('GET', KEYS[3])
  if current and redis.call('HEXISTS', KEYS[1], current) == 1 then
    return current
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('LPUSH', KEYS[2], ARGV[1])
local keep = tonumber(ARGV[3])
for _, old in ipairs(redis.call('LRANGE', KEYS[2], keep, -1)) do
  redis.call('HDEL', KEYS[1], old)
end
redis.call('LTRIM', KEYS[2], 0, keep - 1)
redis.call('SET', KEYS[3], ARGV[1])
return ARGV[1]
