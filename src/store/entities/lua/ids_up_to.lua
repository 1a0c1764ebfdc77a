-- ids_up_to: a page of a timeline of statuses, newest first, from the
-- place of status id ARGV[1] down (it included, when it is there).
--
-- Read-only; a script so that the place and the range are read at one
-- moment: statuses written meanwhile have newer ids, so they enter above
-- the place and cannot shift what a page from it holds (a page read by
-- offset within a score range would shift, since a whole second's
-- statuses share one score: model::timeline_score). One key.
--
-- KEYS[1] the timeline ZSET
-- ARGV[1] the id  ARGV[2] the score it has or would have  ARGV[3] how many
-- Returns the members.
local rank = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not rank then
  -- Not there: after the entries scored above it and those of its score
  -- (ordered by member, so by id) above it, found by halving.
  local lo = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[2], '+inf')
  local hi = redis.call('ZCOUNT', KEYS[1], ARGV[2], '+inf')
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZREVRANGE', KEYS[1], mid, mid)[1]
    if m > ARGV[1] then lo = mid + 1 else hi = mid end
  end
  rank = lo
end
return redis.call('ZREVRANGE', KEYS[1], rank, rank + tonumber(ARGV[3]) - 1)
