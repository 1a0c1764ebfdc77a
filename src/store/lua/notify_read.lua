-- notify_read: moves a user's read marker forward to a notification id,
-- never back.
--
-- Atomic: the comparison and the write are one step, so two sessions
-- marking at once leave the larger. Ids are compared as numbers of equal
-- standing by length, then digits (they outgrow a double). One slot: the
-- user's marker ({<uid>}).
--
-- KEYS[1] marker STRING  ARGV[1] id
-- Returns the marker after the call.
local cur = redis.call('GET', KEYS[1])
local new = ARGV[1]
if cur and (#cur > #new or (#cur == #new and cur >= new)) then
  return cur
end
redis.call('SET', KEYS[1], new)
return new
