-- conv_send: stores a message in its conversation (creating the
-- conversation first when the op starts one), on the conversation's keys.
--
-- The message is recorded in the outbox (op_begin) before this step, so a
-- crash after it is finished by a worker; this step is idempotent (a message
-- id already stored answers 'again' with the participants, changing
-- nothing). Atomic: the membership check, the cap check, the store, the
-- conversation's `updated` and the unread counters change in one script.
-- One slot: the conversation's keys.
--
-- KEYS[1] conversation HASH  KEYS[2] members ZSET  KEYS[3] messages ZSET
-- KEYS[4] bodies HASH  KEYS[5] unread HASH
-- ARGV[1] message id  ARGV[2] sender  ARGV[3] message JSON  ARGV[4] sent
-- ARGV[5] cap on stored messages  ARGV[6] '1': create the conversation with
-- ARGV[7] its id  ARGV[8] kind  ARGV[9] title ('' for none)  ARGV[10..] members
-- Returns {'ok'|'again', member, ...}, {'gone'} (no such conversation or the
-- sender is not in it) or {'full'}.
if ARGV[6] == '1' and redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'id', ARGV[7], 'kind', ARGV[8], 'title', ARGV[9],
    'created', ARGV[4], 'updated', ARGV[4])
  for i = 10, #ARGV do
    redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[i])
  end
end
local function members(status)
  local out = {status}
  for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do out[#out + 1] = m end
  return out
end
if redis.call('HEXISTS', KEYS[4], ARGV[1]) == 1 then
  return members('again')
end
if redis.call('EXISTS', KEYS[1]) == 0 or not redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  return {'gone'}
end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then
  return {'full'}
end
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[1], 'updated', ARGV[4], 'last', ARGV[1])
local out = members('ok')
for i = 2, #out do
  if out[i] ~= ARGV[2] then
    redis.call('HINCRBY', KEYS[5], out[i], 1)
  end
end
redis.call('HSET', KEYS[5], ARGV[2], 0)
return out
