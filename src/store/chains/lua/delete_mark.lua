-- delete_mark: the first step of a delete, on the status: checks that it
-- exists and is the requester's, and marks it deleted by this op (readers
-- treat a marked status as gone).
--
-- Atomic: the ownership check and the mark happen with nothing in between,
-- so of two concurrent deletes exactly one goes on (the seed's
-- lock-then-check race). Idempotent for its own op: a worker finishing a
-- dead request's delete finds the status marked by that op and goes on.
-- One slot: the status's keys.
--
-- KEYS[1] status HASH
-- ARGV[1] requesting uid  ARGV[2] the op number
-- Returns {"ok", field, value, ...} (the status as it was; only `deleted`
-- once buried), {"forbidden"} or {"missing"}.
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then
  return {'missing'}
end
local mark = redis.call('HGET', KEYS[1], 'deleted')
if mark and mark ~= ARGV[2] then
  return {'missing'}
end
local uid = redis.call('HGET', KEYS[1], 'uid')
if uid and uid ~= ARGV[1] then
  return {'forbidden'}
end
redis.call('HSET', KEYS[1], 'deleted', ARGV[2])
local out = {'ok'}
for i = 1, #h do out[#out + 1] = h[i] end
return out
