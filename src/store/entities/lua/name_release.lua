-- name_release: gives up a unique value a user holds: frees it, or keeps
-- it reserved (`r:<uid>:<until>`, taken until then: a deleted account's
-- login). Only a value still held by this user changes, so a rerun, or a
-- value someone else has taken since, is left alone.
--
-- Atomic: the check and the change run together. One slot: the value's
-- own key.
--
-- KEYS[1] the value's STRING  ARGV[1] user id  ARGV[2] the reservation, or
-- "" to free it  ARGV[3] when the reservation ends (Unix seconds: the key
-- goes by itself then)
-- Returns 1 when it changed, else 0.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'EXAT', ARGV[3])
end
return 1
