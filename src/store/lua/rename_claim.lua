-- rename_claim: step 1 of a login or email change: the new value is taken
-- for the user and the old one freed, in one step.
--
-- Atomic because Redis runs a script to completion: of users racing for one
-- value exactly one gets it, and no value is ever held by two users or lost
-- by both (the old value is freed only in the step that takes the new one).
-- Idempotent: a second run finds the new value already the user's. One
-- slot: the unique index is a `{g}` key (logins and emails, lowercased, in
-- one namespace, so a login never equals another's email).
--
-- KEYS[1] unique index HASH
-- ARGV[1] old value (lowercased)  ARGV[2] new value (lowercased)  ARGV[3] user id
-- A deleted account's login is held as `r:<uid>:<until>`: taken until then.
-- Returns 'ok' or 'taken'.
local holder = redis.call('HGET', KEYS[1], ARGV[2])
if holder and holder ~= ARGV[3] then
  local untill = string.match(holder, '^r:%d+:(%d+)$')
  if not (untill and tonumber(untill) <= tonumber(redis.call('TIME')[1])) then
    return 'taken'
  end
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
if ARGV[1] ~= ARGV[2] and redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[3] then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 'ok'
