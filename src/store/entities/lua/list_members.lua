-- list_members: adds users to a list or takes them out. An add past the
-- list's cap adds none of them.
--
-- Atomic: the cap's check and every change of one call run as one script,
-- so parallel adds never pass the cap, and the version the hubs order
-- changes by grows exactly once a call that changed something. One slot:
-- the owner's list HASH and members ZSET.
--
-- KEYS[1] the list's HASH  KEYS[2] its members ZSET
-- ARGV[1] "add" or "remove"  ARGV[2] cap  ARGV[3] now  ARGV[4..] user ids
-- Returns {version, changed ids...} ({version} when nothing changed), -1
-- when there is no such list, -2 when the adds would pass the cap.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local changed = {}
if ARGV[1] == 'add' then
  local new = 0
  local seen = {}
  for i = 4, #ARGV do
    if not seen[ARGV[i]] and not redis.call('ZSCORE', KEYS[2], ARGV[i]) then
      new = new + 1
    end
    seen[ARGV[i]] = true
  end
  if redis.call('ZCARD', KEYS[2]) + new > tonumber(ARGV[2]) then
    return -2
  end
  for i = 4, #ARGV do
    if redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[i]) == 1 then
      changed[#changed + 1] = ARGV[i]
    end
  end
else
  for i = 4, #ARGV do
    if redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
      changed[#changed + 1] = ARGV[i]
    end
  end
end
local version
if #changed > 0 then
  version = redis.call('HINCRBY', KEYS[1], 'version', 1)
else
  version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
end
local out = {version}
for _, id in ipairs(changed) do
  out[#out + 1] = id
end
return out
