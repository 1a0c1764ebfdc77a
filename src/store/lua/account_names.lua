-- account_names: a deleted account's names: the email is freed at once,
-- the login kept reserved until a time (`r:<uid>:<until>`, which sign-up
-- and rename treat as taken until then), so nobody takes a name others
-- still know. Only values still held by this user change, so a rerun (or a
-- value the user gave up before) is left alone. Atomic: one script on the
-- unique index. One slot: `{g}`.
--
-- KEYS[1] unique index HASH
-- ARGV[1] login (lowercased)  ARGV[2] email (lowercased)  ARGV[3] user id
-- ARGV[4] reserved until (unix seconds; 0: free the login at once too)
-- Returns 1.
if redis.call('HGET', KEYS[1], ARGV[2]) == ARGV[3] then
  redis.call('HDEL', KEYS[1], ARGV[2])
end
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[3] then
  if tonumber(ARGV[4]) > 0 then
    redis.call('HSET', KEYS[1], ARGV[1], 'r:' .. ARGV[3] .. ':' .. ARGV[4])
  else
    redis.call('HDEL', KEYS[1], ARGV[1])
  end
end
return 1
