-- rules_delete: deletes filter rules of a user's by id (a dry run only
-- sorts them). Atomic: one script. One slot: the user's keys.
--
-- KEYS[1] rules HASH  KEYS[2] values HASH (field '': the version)
-- KEYS[3] order ZSET  ARGV[1] '1': dry run  ARGV[2..] ids
-- Returns {version, deleted id, ..., '|', not found id, ...} (version 0
-- when nothing changed).
local deleted, missing = {}, {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local json = redis.call('HGET', KEYS[1], id)
  if json then
    deleted[#deleted + 1] = id
    if ARGV[1] ~= '1' then
      local rule = cjson.decode(json)
      redis.call('HDEL', KEYS[1], id)
      redis.call('HDEL', KEYS[2], rule.value)
      redis.call('ZREM', KEYS[3], id)
    end
  else
    missing[#missing + 1] = id
  end
end
local version = 0
if #deleted > 0 and ARGV[1] ~= '1' then version = redis.call('HINCRBY', KEYS[2], '', 1) end
local out = {tostring(version)}
for _, id in ipairs(deleted) do out[#out + 1] = id end
out[#out + 1] = '|'
for _, id in ipairs(missing) do out[#out + 1] = id end
return out
