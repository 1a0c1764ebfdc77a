-- op_finish: the last step of a write recorded by op_begin: retires its
-- outbox entry and, only if this call retired it, emits its events, queues
-- its fan-out tasks and keeps the answer under its idempotency key.
--
-- Atomic, and everything happens only in the call that removed the entry:
-- a write finished twice (a slow request and the worker that took its
-- lease over) announces itself once and queues each range once. One slot:
-- every key is a global `{g}` key.
--
-- KEYS[1] outbox ZSET  KEYS[2] events STREAM  KEYS[3] fan-out STREAM
-- KEYS[4] idempotency STRING (the outbox again when there is none)
-- ARGV[1] member  ARGV[2] MAXLEN  ARGV[3] channel  ARGV[4] e, the number of
-- events  ARGV[5 .. 4+e] event bodies JSON without "id"  then t, the number
-- of tasks, the tasks, and last the answer for the idempotency key ("").
-- Returns {1, first event id or ""} when this call retired the entry, else
-- {0, ""}.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return {0, ''}
end
local e = tonumber(ARGV[4])
local first = ''
for i = 5, 4 + e do
  local body = ARGV[i]
  local eid = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'e', body)
  if first == '' then first = eid end
  redis.call('PUBLISH', ARGV[3], '{"id":"' .. eid .. '",' .. body:sub(2))
end
local t = tonumber(ARGV[5 + e])
for i = 6 + e, 5 + e + t do
  redis.call('XADD', KEYS[3], '*', 't', ARGV[i])
end
local answer = ARGV[6 + e + t]
if answer ~= '' and KEYS[4] ~= KEYS[1] then
  redis.call('SET', KEYS[4], answer, 'KEEPTTL')
end
return {1, first}
