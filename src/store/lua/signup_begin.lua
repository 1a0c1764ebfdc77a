-- signup_begin: step 1 of a sign-up: takes a user id and records the whole
-- sign-up in the outbox, before its names are claimed (`name_claim.lua`,
-- each in its own slot) and the user's keys written, so a process that
-- dies between those steps leaves the record for a worker to finish or to
-- undo (a name taken meanwhile releases the other), never half a user.
--
-- Atomic: the id, the op number and the outbox entry are taken together.
-- One slot: every key is a global `{g}` key.
--
-- KEYS[1] user id counter  KEYS[2] outbox ZSET  KEYS[3] op counter
-- ARGV[1] lease deadline  ARGV[2] op JSON with the placeholder "uid":0
-- Returns {id, member}.
local id = tostring(redis.call('INCR', KEYS[1]))
local n = redis.call('INCR', KEYS[3])
local op = string.gsub(ARGV[2], '"uid":0,', '"uid":' .. id .. ',', 1)
local member = n .. '|' .. op
redis.call('ZADD', KEYS[2], ARGV[1], member)
return {id, member}
