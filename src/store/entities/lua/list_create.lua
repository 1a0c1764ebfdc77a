-- list_create: makes a list for its owner, unless they keep the most lists
-- already; with an Idempotency-Key, a retry answers the list the first
-- call made (while it still exists) and makes no second one.
--
-- Atomic: the key's check, the cap's check and the writes run as one
-- script, so parallel creates never pass the cap and a retry racing its
-- first call finds it. One slot: every key is the owner's ({<uid>}).
--
-- KEYS[1] lists ZSET  KEYS[2] the new list's HASH  KEYS[3] the key's STRING
-- (the lists ZSET again when there is no key)
-- ARGV[1] list id  ARGV[2] title  ARGV[3] now  ARGV[4] cap  ARGV[5] "1" with a key
-- Returns the list's id (a string; the first call's on a retry), or 0 at
-- the cap.
if ARGV[5] == '1' then
  local made = redis.call('GET', KEYS[3])
  if made and redis.call('ZSCORE', KEYS[1], made) then
    return made
  end
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('HSET', KEYS[2], 'title', ARGV[2], 'created', ARGV[3], 'version', 0)
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
if ARGV[5] == '1' then
  redis.call('SET', KEYS[3], ARGV[1], 'EX', 86400)
end
return ARGV[1]
