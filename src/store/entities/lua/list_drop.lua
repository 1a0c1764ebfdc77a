-- list_drop: deletes a list: its HASH, its members and its place in the
-- owner's lists.
--
-- Atomic: the three keys go together, so no reader sees a list without
-- members or members without a list. One slot: every key is the owner's.
--
-- KEYS[1] lists ZSET  KEYS[2] the list's HASH  KEYS[3] its members ZSET
-- ARGV[1] list id
-- Returns the list's version after the delete (for the hubs), or -1 when
-- there was no such list.
if redis.call('EXISTS', KEYS[2]) == 0 then
  return -1
end
local version = redis.call('HINCRBY', KEYS[2], 'version', 1)
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[1], ARGV[1])
return version
