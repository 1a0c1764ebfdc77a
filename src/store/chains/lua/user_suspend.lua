-- user_suspend: suspends (or lifts the suspension of) an account. Atomic:
-- the check and the change are one script, so two admins acting at once
-- make one change (and one audit entry). One slot: the user's HASH.
--
-- KEYS[1] user HASH  ARGV[1] '1' suspend, '0' lift  ARGV[2] op number
-- Returns 1 when this op changed it (now, or in an earlier run of the same
-- op: `mod_op` remembers the op of the last change), 0 when not, -1 for
-- no such user.
if redis.call('HEXISTS', KEYS[1], 'id') == 0 or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then
  return -1
end
local now = redis.call('HGET', KEYS[1], 'suspended') == '1'
local want = ARGV[1] == '1'
if now == want then
  if redis.call('HGET', KEYS[1], 'mod_op') == ARGV[2] then return 1 end
  return 0
end
if want then
  redis.call('HSET', KEYS[1], 'suspended', '1')
else
  redis.call('HDEL', KEYS[1], 'suspended')
end
redis.call('HSET', KEYS[1], 'mod_op', ARGV[2])
return 1
