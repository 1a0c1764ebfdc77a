-- direct_claim: the one direct conversation of a pair of users, claimed in
-- the lower id's slot: the first claim wins, every later one (the other
-- user starting one at the same moment, a rerun) gets the winner's id.
-- Atomic: one HSETNX and its read. One key.
--
-- KEYS[1] the lower id's direct HASH  ARGV[1] the higher id
-- ARGV[2] the conversation id proposed
-- Returns the pair's conversation id.
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
