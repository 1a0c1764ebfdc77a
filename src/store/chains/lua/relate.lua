-- relate: one side of a block or mute change, on one user's keys.
--
-- A user's `hide` HASH holds, per other user, the bits of the relations
-- between them that hide content: 1 the user blocks them, 2 they block the
-- user, 4 the user mutes them, stored as `<bits>:<seq>` where seq is the
-- value of the user's change counter (field `seq`) when that pair last
-- changed. The streams' hub keeps a copy of these pairs per connected user
-- and orders what it hears by seq (`stream::hides`).
--
-- Changes of one relation between two users are ordered by their outbox op
-- numbers, as follows are: a change applies only if no later one applied
-- already (field `o<bit>:<other>`), so both sides of a block converge on
-- the last one whatever order their steps ran in. Setting a block also
-- ends follows both ways and follow requests both ways on this side,
-- recounts, and stamps the follow sequences with the op number so that an
-- older follow finished late cannot come back, even after an unblock.
-- Atomic: the check, the change, the cuts and the recount run as one
-- script; idempotent: a rerun of the same op (n equal to the stamp)
-- changes nothing and reports what the first run cut (field `x:<other>`).
-- One slot: the user's keys.
--
-- KEYS[1] hide HASH  KEYS[2] the list ZSET (blocks or mutes; the other side
-- passes the hide HASH and ARGV[6] '0')  KEYS[3] following  KEYS[4] followers
-- KEYS[5] requests  KEYS[6] requested  KEYS[7] user HASH
-- KEYS[8] follow-applied HASH (fop)  KEYS[9] follower-sequence HASH (fseq)
-- ARGV[1] other id  ARGV[2] bit  ARGV[3] '1' set / '0' clear  ARGV[4] op number
-- ARGV[5] list score  ARGV[6] '1': keep the list  ARGV[7] list cap
-- ARGV[8] '1': setting it cuts follows and requests
-- On one Redis also KEYS[10] the other user's `hidden_by` SET and ARGV[9]
-- this user's id: the user is in it exactly while the pair's bits are not
-- 0, changed here with the bits (a cluster passes neither; the SET is in
-- the other user's slot, which only a single Redis allows in one script).
-- Returns {outcome, bits, seq, cut_following, cut_follower}; outcome 1 applied,
-- 2 a later change won, -1 the list is full, -2 no such user.
if redis.call('EXISTS', KEYS[7]) == 0 then
  return {-2, 0, 0, 0, 0}
end
local other = ARGV[1]
local flag = tonumber(ARGV[2])
local n = tonumber(ARGV[4])
local okey = 'o' .. ARGV[2] .. ':' .. other
local function pair()
  local cur = redis.call('HGET', KEYS[1], other)
  if not cur then
    return 0, tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
  end
  local b, s = string.match(cur, '^(%d+):(%d+)$')
  return tonumber(b), tonumber(s)
end
local bits, seq = pair()
local last = tonumber(redis.call('HGET', KEYS[1], okey) or '0')
if n < last then
  return {2, bits, seq, 0, 0}
end
if n == last then
  local x = redis.call('HGET', KEYS[1], 'x:' .. other)
  local cf, cr = 0, 0
  if x then
    local xn, a, b = string.match(x, '^(%d+):(%d):(%d)$')
    if tonumber(xn) == n then cf, cr = tonumber(a), tonumber(b) end
  end
  return {1, bits, seq, cf, cr}
end
local on = ARGV[3] == '1'
local has = bit.band(bits, flag) ~= 0
if on and not has and ARGV[6] == '1' and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[7]) then
  return {-1, bits, seq, 0, 0}
end
redis.call('HSET', KEYS[1], okey, n)
if on ~= has then
  if on then bits = bits + flag else bits = bits - flag end
  seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
  redis.call('HSET', KEYS[1], other, bits .. ':' .. seq)
  if KEYS[10] then
    if bits ~= 0 then
      redis.call('SADD', KEYS[10], ARGV[9])
    else
      redis.call('SREM', KEYS[10], ARGV[9])
    end
  end
end
if ARGV[6] == '1' then
  if on then
    redis.call('ZADD', KEYS[2], 'NX', ARGV[5], other)
  else
    redis.call('ZREM', KEYS[2], other)
  end
end
local cf, cr = 0, 0
if on and ARGV[8] == '1' then
  cf = redis.call('ZREM', KEYS[3], other)
  cr = redis.call('ZREM', KEYS[4], other)
  redis.call('ZREM', KEYS[5], other)
  redis.call('ZREM', KEYS[6], other)
  redis.call('HSET', KEYS[8], other, n)
  redis.call('HSET', KEYS[9], other, n)
  redis.call('HSET', KEYS[7], 'following', redis.call('ZCARD', KEYS[3]),
    'followers', redis.call('ZCARD', KEYS[4]))
  redis.call('HSET', KEYS[1], 'x:' .. other, n .. ':' .. cf .. ':' .. cr)
end
return {1, bits, seq, cf, cr}
