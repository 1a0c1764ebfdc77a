-- fanout_page: the next followers of a fan-out range, in the followers
-- ZSET's order (score, then member), strictly after the cursor.
--
-- Exact whatever the follow times: a cursor follower still in place is found
-- by ZRANK; one that has left (or moved) is located among the followers
-- sharing its score by binary search on rank, so ties of any size are
-- stepped over without skipping or repeating anyone. Read-only, one key.
--
-- KEYS[1] followers ZSET
-- ARGV[1] cursor score ("-inf": from the start)  ARGV[2] cursor member
-- ARGV[3] how many
-- Returns {member, score, member, score, ...}.
local limit = tonumber(ARGV[3])
local start = 0
if ARGV[1] ~= '-inf' then
  local cs = tonumber(ARGV[1])
  local s = redis.call('ZSCORE', KEYS[1], ARGV[2])
  if s and tonumber(s) == cs then
    start = redis.call('ZRANK', KEYS[1], ARGV[2]) + 1
  else
    local lo = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[1])
    local hi = redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[1])
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local m = redis.call('ZRANGE', KEYS[1], mid, mid)[1]
      if m <= ARGV[2] then lo = mid + 1 else hi = mid end
    end
    start = lo
  end
end
return redis.call('ZRANGE', KEYS[1], start, start + limit - 1, 'WITHSCORES')
