-- record_view: adds a status to a session's recently viewed ZSET, capped at 25.
--
-- Atomic so that the add, the trim and the "session still live" check run
-- together: a view racing the end of its session cannot recreate the viewed
-- ZSET of an ended session. One slot: both keys are the user's.
--
-- KEYS[1] live ZSET  KEYS[2] viewed ZSET
-- ARGV[1] session id  ARGV[2] now  ARGV[3] status id  ARGV[4] cap
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[4]) - 1)
return 1
