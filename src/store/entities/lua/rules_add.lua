-- rules_add: adds filter rules to a user's set, all or none.
--
-- A value the user already has (or that an earlier item of the same add
-- has) answers that rule, creating nothing; the others are created with
-- the ids the caller drew, unless that would pass the cap, when nothing
-- changes. A dry run answers the same and writes nothing. Atomic: the
-- checks and every write run as one script. One slot: the user's keys.
--
-- KEYS[1] rules HASH (id -> rule JSON)  KEYS[2] values HASH (value -> id;
-- field '' the rules' version, raised by every change)
-- KEYS[3] order ZSET (id -> created)
-- ARGV[1] cap  ARGV[2] '1': dry run  ARGV[3] now
-- ARGV[4..] triples: value, tag JSON (`null` or a JSON string), new id
-- Returns {'too_many'} or {'ok', created, version, id or '', ...} (an id
-- per item: the existing one, the new one, or '' for a new one in a dry
-- run; version 0 when nothing changed).
local cap, dry, now = tonumber(ARGV[1]), ARGV[2] == '1', ARGV[3]
local seen, fresh, answer = {}, 0, {}
for i = 4, #ARGV, 3 do
  local value = ARGV[i]
  if not redis.call('HGET', KEYS[2], value) and not seen[value] then
    seen[value] = ARGV[i + 2]
    fresh = fresh + 1
  end
end
if fresh > 0 and redis.call('HLEN', KEYS[1]) + fresh > cap then
  return {'too_many'}
end
local made = {}
for i = 4, #ARGV, 3 do
  local value, tag, id = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local existing = redis.call('HGET', KEYS[2], value)
  if existing then
    answer[#answer + 1] = existing
  elseif made[value] then
    answer[#answer + 1] = made[value]
  elseif dry then
    made[value] = ''
    answer[#answer + 1] = ''
  else
    local json = '{"id":"' .. id .. '","value":' .. cjson.encode(value) .. ',"tag":' .. tag .. '}'
    redis.call('HSET', KEYS[1], id, json)
    redis.call('HSET', KEYS[2], value, id)
    redis.call('ZADD', KEYS[3], now, id)
    made[value] = id
    answer[#answer + 1] = id
  end
end
local version = 0
if fresh > 0 and not dry then version = redis.call('HINCRBY', KEYS[2], '', 1) end
local out = {'ok', fresh, version}
for _, id in ipairs(answer) do out[#out + 1] = id end
return out
