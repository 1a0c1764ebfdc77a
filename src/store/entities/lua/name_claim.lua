-- name_claim: claims one unique value (a login or an email, lowercased;
-- one namespace, so a login never equals another's email) for a user.
--
-- Atomic because Redis runs a script to completion: the check and the claim
-- cannot interleave with another claim, so of N users racing for one value
-- exactly one gets it, with no lock and no timeout. Idempotent: the user's
-- own value is theirs again. One slot: the value's own key.
--
-- KEYS[1] the value's STRING  ARGV[1] user id
-- A deleted account's login is held as `r:<uid>:<until>`: taken until then.
-- Returns 1 when the value is the user's, 0 when it is taken.
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  local untill = string.match(holder, '^r:%d+:(%d+)$')
  if not (untill and tonumber(untill) <= tonumber(redis.call('TIME')[1])) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
