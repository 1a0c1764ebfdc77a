-- replies_count: a reply enters (or leaves) its parent's replies, and the
-- parent's `replies` count is recomputed as the ZCARD.
--
-- Atomic so the count never drifts; idempotent. One slot: the parent's
-- status keys.
--
-- KEYS[1] parent status HASH  KEYS[2] parent's replies ZSET
-- ARGV[1] "1" add / "0" remove  ARGV[2] reply id  ARGV[3] its score (the
-- whole second of its `posted`, model::timeline_score)
if ARGV[1] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
else
  redis.call('ZREM', KEYS[2], ARGV[2])
end
if redis.call('HEXISTS', KEYS[1], 'id') == 1 then
  redis.call('HSET', KEYS[1], 'replies', redis.call('ZCARD', KEYS[2]))
end
return 1
