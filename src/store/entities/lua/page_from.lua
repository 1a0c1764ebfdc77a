-- page_from: a page of a ZSET newest first (highest score first), starting
-- at a member and including it: where a list is not in id order (a user's
-- likes, in like order), a page starts at the place of the last entry the
-- client was shown.
--
-- Read-only; a script so that the rank and the range are read at one
-- moment. One key.
--
-- KEYS[1] the ZSET
-- ARGV[1] the member to start at  ARGV[2] how many
-- Returns the members, or nil when the member is not in the ZSET.
local rank = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not rank then
  return false
end
return redis.call('ZREVRANGE', KEYS[1], rank, rank + tonumber(ARGV[2]) - 1)
