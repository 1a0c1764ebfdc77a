-- bookmark_add: bookmarks a status for a user, unless they keep the most
-- bookmarks already. A status already bookmarked keeps its place (the
-- time it was first bookmarked): idempotent.
--
-- Atomic: the check of the cap and the add run as one script, so parallel
-- adds never pass it. One slot: the user's bookmarks ZSET.
--
-- KEYS[1] bookmarks ZSET (status id -> minus the time: newest first)
-- ARGV[1] status id  ARGV[2] score  ARGV[3] cap
-- Returns 1 (bookmarked now or already) or 0 (at the cap).
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
