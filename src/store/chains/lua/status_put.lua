-- status_put: stores a status HASH (a step of a post, in the status's slot).
--
-- Idempotent: the HSETNX on `id` makes a second run a no-op, and a status
-- already deleted (a tombstone with `deleted` and no `id`) is not brought
-- back. One key.
--
-- KEYS[1] status HASH
-- ARGV[1] status id  ARGV[2..] field, value pairs
-- Returns 1 when stored now, 0 when it was there, -1 when deleted.
if redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then
  return -1
end
if redis.call('HSETNX', KEYS[1], 'id', ARGV[1]) == 0 then
  return 0
end
local fields = {}
for i = 2, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
return 1
