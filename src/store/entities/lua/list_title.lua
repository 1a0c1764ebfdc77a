-- list_title: renames a list that exists.
--
-- Atomic: the check and the write are one script, so a rename racing the
-- list's delete never leaves a HASH with only a title behind. One slot:
-- the owner's list HASH.
--
-- KEYS[1] the list's HASH  ARGV[1] the title
-- Returns 1, or 0 when there is no such list.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'title', ARGV[1])
return 1
