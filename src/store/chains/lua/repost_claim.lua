-- repost_claim: a repost's step on the original's keys: maps the reposter
-- to the repost (a user reposts a status once) and recounts `reposts` as
-- the mapping's HLEN; or, for a deleted repost, drops its mapping.
--
-- Atomic: the "already reposted?" check and the mapping cannot interleave
-- with another repost by the same user. Idempotent: the same repost id
-- maps again to itself. One slot: the original's status keys.
--
-- KEYS[1] original status HASH  KEYS[2] its reposters HASH
-- ARGV[1] "1" add / "0" remove  ARGV[2] reposter id  ARGV[3] repost id
-- Returns {"ok"}, {"reposted", first repost id} or {"missing"}.
local existing = redis.call('HGET', KEYS[2], ARGV[2])
if ARGV[1] == '1' then
  if existing and existing ~= ARGV[3] then
    return {'reposted', existing}
  end
  if redis.call('HEXISTS', KEYS[1], 'id') == 0 or redis.call('HEXISTS', KEYS[1], 'deleted') == 1 then
    return {'missing'}
  end
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
elseif existing == ARGV[3] then
  redis.call('HDEL', KEYS[2], ARGV[2])
end
if redis.call('HEXISTS', KEYS[1], 'id') == 1 then
  redis.call('HSET', KEYS[1], 'reposts', redis.call('HLEN', KEYS[2]))
end
return {'ok'}
