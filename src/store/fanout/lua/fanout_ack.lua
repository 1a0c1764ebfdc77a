-- fanout_ack: acknowledges a fan-out task and queues the task for the rest
-- of its range, if any.
--
-- Atomic, and the next task is queued only by the acknowledgement that
-- actually acknowledged: when a slow worker and the one that reclaimed its
-- task both finish the same batch, only the first queues the remainder, so
-- the rest of the range is never worked twice. One key.
--
-- KEYS[1] fan-out STREAM
-- ARGV[1] consumer group  ARGV[2] entry id  ARGV[3] next task ("" for none)
-- Returns 1 when this call acknowledged the entry, else 0.
local acked = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if acked == 1 and ARGV[3] ~= '' then
  redis.call('XADD', KEYS[1], '*', 't', ARGV[3])
end
redis.call('XDEL', KEYS[1], ARGV[2])
return acked
