-- rate_take: takes a token from one token bucket, shared by every process.
-- Atomic: one script reads and writes the bucket. One slot: KEYS[1] is
-- the bucket alone, hash-tagged by what it counts (an address or a user),
-- so buckets spread over the cluster.
--
-- KEYS[1] STRING "<tokens> <at>" (at: Redis time, seconds)
-- ARGV[1] tokens a second  ARGV[2] burst  ARGV[3] "0": only look (take
-- nothing, write nothing), else take one
-- Returns 0 (taken, or one there to take), or the whole seconds until a
-- token is back.
-- The clock is Redis's (TIME), so processes on different machines agree.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local per, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local tokens, at = burst, now
local v = redis.call('GET', KEYS[1])
if v then
  local sp = string.find(v, ' ', 1, true)
  tokens, at = tonumber(string.sub(v, 1, sp - 1)), tonumber(string.sub(v, sp + 1))
end
tokens = math.min(burst, tokens + math.max(0, now - at) * per)
if tokens < 1 then
  return math.max(1, math.ceil((1 - tokens) / per))
end
if ARGV[3] == '0' then
  return 0
end
tokens = tokens - 1
-- Kept until it would be full again: a full bucket is no key at all.
local ms = math.ceil((burst - tokens) / per * 1000) + 1
redis.call('SET', KEYS[1], string.format('%.6f %.6f', tokens, now), 'PX', ms)
return 0
