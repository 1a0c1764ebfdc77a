-- undo_take: the next round of an account deletion's work on one of the
-- user's sets: the round still in progress if a process died during it,
-- else the next members, moved from the set into the round's own ZSET.
--
-- Keeping the round in Redis until it is done is what makes a deletion
-- killed half way exact: a member whose chain ran half way (an unfollow
-- whose home clean-up had not run yet) is in the round again on the rerun,
-- and every chain is idempotent. Atomic: the check, the move and the
-- removal run as one script. One slot: the user's keys.
--
-- KEYS[1] the set being emptied  KEYS[2] the round in progress (the set's
-- own: a rerun never takes one set's round for another's)
-- ARGV[1] how many  ARGV[2] '1': newest first
-- Returns the round's members.
local round = redis.call('ZRANGE', KEYS[2], 0, -1)
if #round > 0 then
  return round
end
local n = tonumber(ARGV[1])
local taken
if ARGV[2] == '1' then
  taken = redis.call('ZREVRANGE', KEYS[1], 0, n - 1, 'WITHSCORES')
else
  taken = redis.call('ZRANGE', KEYS[1], 0, n - 1, 'WITHSCORES')
end
local members = {}
for i = 1, #taken, 2 do
  redis.call('ZADD', KEYS[2], taken[i + 1], taken[i])
  members[#members + 1] = taken[i]
end
if #members > 0 then
  redis.call('ZREM', KEYS[1], unpack(members))
end
return members
