-- notify_add: a notification for a user, once per key (`like:<who>:<status>`,
-- `follow:<who>`, ...), the newest 1,000 kept.
--
-- Atomic and idempotent: the key's check, the notification and its key are
-- written together, so a notifier that runs an event twice (a crash, two
-- processes) adds it once and only the call that added it answers 1 (and
-- sends the event). The oldest past the cap leave with their keys. One
-- slot: the user's ({<uid>}).
--
-- KEYS[1] notifications ZSET (id -> whole second)  KEYS[2] id -> JSON HASH
-- KEYS[3] key -> id HASH
-- The id is made from the event's (store::notifier), and two events of one
-- millisecond may make the same: a notification of another key holding it
-- already, the next free id is taken (and written into the JSON).
--
-- ARGV[1] key  ARGV[2] id  ARGV[3] score  ARGV[4] JSON (with "key" and
-- "id")  ARGV[5] cap
-- Returns the id when added, "" when the key had one already.
-- The key claimed first (HSETNX: a key that had one adds nothing); then
-- the id, the next free one when another's holds it (HSETNX again), and
-- the key pointed at it when it moved.
if redis.call('HSETNX', KEYS[3], ARGV[1], ARGV[2]) == 0 then
  return ''
end
local id, json = ARGV[2], ARGV[4]
while redis.call('HSETNX', KEYS[2], id, json) == 0 do
  id = string.format('%.0f', tonumber(id) + 1)
  json = string.gsub(ARGV[4], '"id":"' .. ARGV[2] .. '"', '"id":"' .. id .. '"', 1)
end
if id ~= ARGV[2] then
  redis.call('HSET', KEYS[3], ARGV[1], id)
end
redis.call('ZADD', KEYS[1], ARGV[3], id)
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[5])
if over > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, over - 1)) do
    local v = redis.call('HGET', KEYS[2], id)
    if v then
      local ok, n = pcall(cjson.decode, v)
      if ok and n.key then
        redis.call('HDEL', KEYS[3], n.key)
      end
    end
    redis.call('HDEL', KEYS[2], id)
    redis.call('ZREM', KEYS[1], id)
  end
end
return id
