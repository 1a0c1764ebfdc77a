-- session_end: ends sessions of one user at their authority, the user's
-- `live` ZSET, with their viewed lists and their entries in the user's list.
--
-- Atomic per call: for each session the check "still idle past the cutoff"
-- and the removal run with no request in between, so a session used at this
-- very moment (its score just raised) is not ended by the idle sweep. One
-- slot: every key is one user's (the viewed keys share its hash tag).
--
-- KEYS[1] live ZSET  KEYS[2] the user's sessions ZSET
-- ARGV[1] cutoff (end only if last seen <= cutoff; "+inf" ends them all)
-- ARGV[2] viewed key stem  ARGV[3..] session ids
-- Returns {ended ids, {id, last seen, ...} for those used since the cutoff}.
local ended, kept = {}, {}
for i = 3, #ARGV do
  local sid = ARGV[i]
  local seen = redis.call('ZSCORE', KEYS[1], sid)
  if ARGV[1] ~= '+inf' and seen and tonumber(seen) > tonumber(ARGV[1]) then
    kept[#kept + 1] = sid
    kept[#kept + 1] = seen
  else
    redis.call('ZREM', KEYS[1], sid)
    redis.call('ZREM', KEYS[2], sid)
    redis.call('DEL', ARGV[2] .. sid)
    ended[#ended + 1] = sid
  end
end
return {ended, kept}
