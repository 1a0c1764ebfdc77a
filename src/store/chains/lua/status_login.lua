-- status_login: shows an author's new login on one of their statuses (a
-- step of a login change). Only a status that exists and is the author's
-- changes, so a rerun, or a status deleted meanwhile (a tombstone has no
-- `uid`), is left alone. Atomic: the check and the write in one script.
-- One key.
--
-- KEYS[1] status HASH  ARGV[1] author id  ARGV[2] login
-- Returns 1 if written.
if redis.call('HGET', KEYS[1], 'uid') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'login', ARGV[2])
return 1
