-- request_add: one side of a new follow request (the private account's
-- incoming set, or the asker's outgoing set), unless a block between the
-- two users holds on this side.
--
-- A block ends requests both ways in `relate.lua`; checking its bits in the
-- same script as the ZADD means a request step that runs after the block's
-- step on this user cannot bring one back. Atomic: check and add in one
-- script. One slot: the user's keys.
--
-- KEYS[1] requests or requested ZSET  KEYS[2] hide HASH
-- ARGV[1] time  ARGV[2] the other user
-- Returns 1 added, 0 there already, -1 blocked.
local cur = redis.call('HGET', KEYS[2], ARGV[2])
local bits = tonumber(cur and string.match(cur, '^(%d+):') or '0')
if bit.band(bits, 3) ~= 0 then
  return -1
end
return redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2])
