-- follow_source: step 1 of follow/unfollow, on the follower's own keys.
--
-- The follower's `following` ZSET is the authority on the relationship. This
-- step changes it, recounts `following` as its ZCARD (so the counter always
-- equals the set size), stamps the change with a sequence number from the
-- follower's own counter and, for a change, records steps 2 and 3 in the
-- outbox, so a process or client that goes away after this step leaves the
-- rest (and the event) to a worker. Step 2 on the followee's keys applies
-- changes only in sequence order, so racing follow/unfollow pairs converge
-- on whatever this step decided last. Atomic because the change, the
-- recount, the stamp and the outbox entry run as one script; idempotent
-- because a repeated follow or unfollow changes nothing and still returns
-- the current stamp.
--
-- Keys: the follower's keys (one slot) and the global outbox.
--
-- KEYS[1] follower's following ZSET  KEYS[2] follower's user HASH
-- KEYS[3] outbox ZSET
-- ARGV[1] followee id  ARGV[2] "1" follow / "0" unfollow  ARGV[3] now
-- ARGV[4] outbox op prefix ("follow|source|target|flag|")
-- ARGV[5] lease deadline
-- Returns {changed 0/1, sequence, following count, outbox op or ""}.
local changed
if ARGV[2] == '1' then
  changed = redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[1])
else
  changed = redis.call('ZREM', KEYS[1], ARGV[1])
end
local count = redis.call('ZCARD', KEYS[1])
redis.call('HSET', KEYS[2], 'following', count)
local seq
local op = ''
if changed == 1 then
  seq = redis.call('HINCRBY', KEYS[2], 'follow_seq', 1)
  op = ARGV[4] .. seq .. '|' .. ARGV[3]
  redis.call('ZADD', KEYS[3], ARGV[5], op)
else
  seq = tonumber(redis.call('HGET', KEYS[2], 'follow_seq') or '0')
end
return {changed, seq, count, op}
