-- create_user: claims a login and an email and creates the user, or nothing.
--
-- Atomic because Redis runs a script to completion with no other command in
-- between: the uniqueness check and the claim cannot interleave with another
-- registration, so of N concurrent sign-ups for one login exactly one wins,
-- with no lock and no timeout. All unique values (logins and emails,
-- lowercased) share one HASH, so a login can never equal another's email
-- (CoffeeNode's "user/*:VALUE/~prk" rule).
--
-- KEYS[1] unique index HASH   KEYS[2] user id counter   KEYS[3] events STREAM
-- ARGV[1] lowercased login    ARGV[2] lowercased email
-- ARGV[3] login as typed      ARGV[4] name   ARGV[5] email as typed
-- ARGV[6] argon2id hash       ARGV[7] signup time
-- ARGV[8] replay MAXLEN       ARGV[9] events channel
-- ARGV[10] key prefix for user keys ("<prefix>:user:{")
-- Returns {"ok", id, event id} or {"taken", "login"|"email"}.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  return {'taken', 'login'}
end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  return {'taken', 'email'}
end
local id = tostring(redis.call('INCR', KEYS[2]))
redis.call('HSET', KEYS[1], ARGV[1], id, ARGV[2], id)
local user = ARGV[10] .. id .. '}'
redis.call('HSET', user, 'id', id, 'login', ARGV[3], 'name', ARGV[4],
  'followers', 0, 'following', 0, 'posts', 0, 'signup', ARGV[7])
redis.call('HSET', user .. ':secret', 'email', ARGV[5], 'password', ARGV[6])
local body = '{"type":"user","at":' .. ARGV[7] .. ',"user":' .. cjson.encode({
  id = id, login = ARGV[3], name = ARGV[4], followers = 0, following = 0,
  posts = 0}):sub(1, -2) .. ',"signup":' .. ARGV[7] .. '}}'
local eid = redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[8], '*', 'e', body)
redis.call('PUBLISH', ARGV[9], '{"id":"' .. eid .. '",' .. body:sub(2))
return {'ok', id, eid}
