-- notify_read: moves a user's read marker forward to a notification id,
-- never back, and never past the newest notification the user has (an id
-- beyond it marks up to it: a notification made later is unread).
--
-- Atomic: the comparison and the write are one step, so two sessions
-- marking at once leave the larger, and a notification added meanwhile is
-- either below the clamp or unread. Ids are compared as numbers of equal
-- standing by length, then digits (they outgrow a double). One slot: the
-- user's marker and notifications ({<uid>}).
--
-- KEYS[1] marker STRING  KEYS[2] notifications ZSET (ids, by time)
-- ARGV[1] id
-- Returns the marker after the call ("0": nothing read).
local function above(a, b)
  return #a > #b or (#a == #b and a > b)
end
local cur = redis.call('GET', KEYS[1])
local new = ARGV[1]
local newest = redis.call('ZREVRANGE', KEYS[2], 0, 0)[1]
if not newest then
  return cur or '0'
end
if above(new, newest) then
  new = newest
end
if cur and not above(new, cur) then
  return cur
end
redis.call('SET', KEYS[1], new)
return new
