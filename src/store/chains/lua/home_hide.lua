-- home_hide: takes statuses out of a home timeline while a relation that
-- hides their author still holds (a block either way, or a mute).
--
-- The caller read the home and chose the statuses by the other user and
-- reposts of them; checking the relation in the same script makes a late
-- run (a sweeper finishing a block after an unmute) harmless: with the
-- relation gone, nothing is removed. Atomic: the check and the removals run
-- as one script. One slot: the user's keys.
--
-- KEYS[1] hide HASH  KEYS[2] home ZSET
-- ARGV[1] other id  ARGV[2] mask of relation bits that hide  ARGV[3..] ids
-- Returns the number of entries removed.
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local bits = tonumber(cur and string.match(cur, '^(%d+):') or '0')
if bit.band(bits, tonumber(ARGV[2])) == 0 then
  return 0
end
local n = 0
for i = 3, #ARGV do
  n = n + redis.call('ZREM', KEYS[2], ARGV[i])
end
return n
