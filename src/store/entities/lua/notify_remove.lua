-- notify_remove: takes away the notification a key names (a like, repost
-- or follow undone).
--
-- Atomic: the notification and its key go together. Idempotent: a second
-- call finds no key and answers nothing. One slot: the user's ({<uid>}).
--
-- KEYS[1] notifications ZSET  KEYS[2] id -> JSON HASH  KEYS[3] key -> id HASH
-- ARGV[1] key
-- Returns the notification's id, or false when there was none.
local id = redis.call('HGET', KEYS[3], ARGV[1])
if not id then
  return false
end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[2], id)
redis.call('ZREM', KEYS[1], id)
return id
