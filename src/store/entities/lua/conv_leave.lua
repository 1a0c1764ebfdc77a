-- conv_leave: a participant leaves a group conversation, on the
-- conversation's keys (their list entry is dropped after, in their slot).
-- Atomic: the kind check, the removal and the unread counter in one
-- script; idempotent: leaving twice leaves once. One slot.
--
-- KEYS[1] conversation HASH  KEYS[2] members ZSET  KEYS[3] unread HASH
-- ARGV[1] the user  ARGV[2] '1': a direct one too (the account is deleted)
-- Returns 'ok', 'gone' (no such conversation, or not in it) or 'direct'.
if redis.call('EXISTS', KEYS[1]) == 0 or not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return 'gone'
end
if redis.call('HGET', KEYS[1], 'kind') ~= 'group' and ARGV[2] ~= '1' then
  return 'direct'
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 'ok'
