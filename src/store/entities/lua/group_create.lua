-- group_create: makes a group with its creator as its one owner. Atomic:
-- one script; a rerun with the same id changes nothing (HSETNX). One slot:
-- the group's keys.
--
-- KEYS[1] group HASH  KEYS[2] members ZSET  KEYS[3] roles HASH
-- ARGV[1] id  ARGV[2] name  ARGV[3] description  ARGV[4] kind
-- ARGV[5] created  ARGV[6] creator
if redis.call('HSETNX', KEYS[1], 'id', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'name', ARGV[2], 'description', ARGV[3],
  'kind', ARGV[4], 'created', ARGV[5], 'owner', ARGV[6],
  'members', 1, 'owners', 1)
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[6])
redis.call('HSET', KEYS[3], ARGV[6], 'owner')
return 1
