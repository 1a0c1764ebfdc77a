-- report_add: files a report unless the open queue is full. Atomic: the
-- count and the write are one script. One slot: `{mod}`.
--
-- KEYS[1] reports HASH  KEYS[2] open ZSET
-- ARGV[1] id  ARGV[2] JSON  ARGV[3] minus the id (time-ordered)
-- ARGV[4] open reports kept at most
-- Returns 1, or 0 when the queue is full.
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
