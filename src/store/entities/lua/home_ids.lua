-- home_ids: a slice of a home timeline, newest first, as one string of ids
-- joined by commas ("" when empty). A read, so there is nothing to keep
-- atomic; it is a script because one bulk string costs the server a
-- fraction of what parsing an array of ids does (a page read is mostly
-- that parse otherwise). One slot: the one key.
--
-- KEYS[1] home ZSET
-- ARGV[1] start rank  ARGV[2] stop rank (inclusive)
return table.concat(redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2]), ',')
