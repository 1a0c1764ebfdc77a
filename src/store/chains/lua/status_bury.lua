-- status_bury: the last step of a delete on the status's own keys: its
-- likers, like sequences and reposters go, and the HASH becomes a
-- tombstone that keeps only `deleted` (the op number) for a day, so a late
-- step of the same op still recognises its delete and a late post step
-- cannot bring the status back.
--
-- Idempotent. One slot: the status's keys.
--
-- KEYS[1] status HASH  KEYS[2] likers ZSET  KEYS[3] like sequences HASH
-- KEYS[4] reposters HASH
-- ARGV[1] the op number  ARGV[2] tombstone TTL (s)
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('HSET', KEYS[1], 'deleted', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
