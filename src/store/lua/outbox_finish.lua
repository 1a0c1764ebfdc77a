-- outbox_finish: retires an outbox entry whose inline work is done and
-- queues the fan-out tasks for the rest of the followers.
--
-- Atomic, and the tasks are queued only by the call that removed the entry:
-- if a worker took over an entry whose request was slow, whichever finishes
-- second queues nothing, so no range is worked twice. Both keys are global.
--
-- KEYS[1] outbox ZSET  KEYS[2] fan-out STREAM
-- ARGV[1] the outbox op  ARGV[2..] fan-out tasks
-- Returns 1 when this call retired the entry, else 0.
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 then
  for i = 2, #ARGV do
    redis.call('XADD', KEYS[2], '*', 't', ARGV[i])
  end
end
return removed
