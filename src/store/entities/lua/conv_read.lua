-- conv_read: marks a conversation read for one participant (their unread
-- count to 0). Atomic: the membership check and the reset in one script.
-- One slot: the conversation's keys.
--
-- KEYS[1] members ZSET  KEYS[2] unread HASH  ARGV[1] the user
-- Returns 1, or 0 if the user is not in the conversation.
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[1], 0)
return 1
