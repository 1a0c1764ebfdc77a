-- claim_names: step 1 of a sign-up: takes a user id and claims the login
-- and the email for it, recording the rest of the sign-up in the outbox.
--
-- Atomic because Redis runs a script to completion with no other command in
-- between: the uniqueness check and the claim cannot interleave with another
-- registration, so of N concurrent sign-ups for one login exactly one wins,
-- with no lock and no timeout. All unique values (logins and emails,
-- lowercased) share one HASH, so a login can never equal another's email.
-- One slot: every key is a global `{g}` key. The user's own keys are
-- written by the next step (in the user's slot) and the sign-up is
-- announced by op_finish; a sign-up whose process died in between is
-- finished, or its names released, by a worker.
--
-- KEYS[1] unique index HASH  KEYS[2] user id counter  KEYS[3] outbox ZSET
-- KEYS[4] op counter
-- ARGV[1] lowercased login  ARGV[2] lowercased email  ARGV[3] lease deadline
-- ARGV[4] op JSON with the placeholder "uid":0, for the id
-- A deleted account's login is held as `r:<uid>:<until>`: taken until then.
-- Returns {"ok", id, member} or {"taken", "login"|"email"}.
local now = tonumber(redis.call('TIME')[1])
local function taken(value)
  local holder = redis.call('HGET', KEYS[1], value)
  if not holder then return false end
  local untill = string.match(holder, '^r:%d+:(%d+)$')
  return not (untill and tonumber(untill) <= now)
end
if taken(ARGV[1]) then
  return {'taken', 'login'}
end
if taken(ARGV[2]) then
  return {'taken', 'email'}
end
local id = tostring(redis.call('INCR', KEYS[2]))
redis.call('HSET', KEYS[1], ARGV[1], id, ARGV[2], id)
local n = redis.call('INCR', KEYS[4])
local op = string.gsub(ARGV[4], '"uid":0,', '"uid":' .. id .. ',', 1)
local member = n .. '|' .. op
redis.call('ZADD', KEYS[3], ARGV[3], member)
return {'ok', id, member}
