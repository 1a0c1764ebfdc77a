-- follow_whole: one user follows (or unfollows) up to a chunk of users,
-- every step of each change, on one Redis (not a cluster, where each change
-- is the chain follow_source, follow_target, follow_home, emit_once and
-- op_retire,
-- driven from the outbox).
--
-- Atomic: one script changes both users' sets and counters and the
-- follower's home, and emits the events, for every user of the chunk, so
-- there is nothing to finish after a crash and no outbox entry; a racing
-- post, delete or block runs wholly before or after it. The follower's
-- relations are read once, their `following` count moves once and the
-- events are published in one message for the chunk (a batch of ten
-- follows sends nearly thirty fewer commands than ten calls).
-- Not one slot: it names keys of many users and `{g}`, which only a single
-- Redis allows (Store::follow_whole runs it only there). Short: it stops
-- after the followee whose statuses took the home copies (or removals)
-- past ARGV[9], so one call moves at most that plus one followee's
-- statuses; the caller sends the rest again.
--
-- KEYS[1] follower user HASH  KEYS[2] follower's following ZSET
-- KEYS[3] follower's applied-change HASH  KEYS[4] follower's hide HASH
-- KEYS[5] follower's home ZSET  KEYS[6] the follower's shard of the event
-- log STREAM (`log_append`)
-- then per followee, 7 keys from KEYS[7 + 7 * (j - 1)]: user HASH,
-- followers ZSET, follower-sequence HASH, hide HASH, profile ZSET,
-- recently-deleted ZSET, the op counter of the pair's outbox partition
-- (store::outbox)
-- ARGV[1] follower id  ARGV[2] "1" follow / "0" unfollow  ARGV[3] now
-- ARGV[4] home cap  ARGV[5] trim (`~N` or `=N`)  ARGV[6] channel  ARGV[7] stride
-- ARGV[8] n, followees  ARGV[9] the budget of statuses copied or removed
-- ARGV[10] PUBLISH or SPUBLISH  ARGV[11] the shard's number
-- then per followee 3 args from ARGV[12 + 3 * (j - 1)]:
-- its id, the event JSON without "id", the partition (an op number is
-- counter * stride + partition, op_begin.lua)
-- Returns {{hidden user id, ...}, {outcome, ...}, {status id copied, ...}}:
-- an outcome per followee worked, in order (the first ones: fewer than n
-- when the budget ran out), 1 changed, 0 unchanged, -1 no such user,
-- -2 a block stands between them.
local follower, follow, now = ARGV[1], ARGV[2] == '1', ARGV[3]
local cap, stride, n = tonumber(ARGV[4]), tonumber(ARGV[7]), tonumber(ARGV[8])
local budget = tonumber(ARGV[9])
local function blocks(rel)
  return rel and bit.band(tonumber(string.match(rel, '^(%d+):')), 3) ~= 0
end
-- The follower's relations, once: a block either way refuses a follow, a
-- mute of the followee copies nothing, and every user hidden from the
-- follower is returned (the caller takes out reposts of theirs).
local hidden, relation = {}, {}
if follow then
  local rel = redis.call('HGETALL', KEYS[4])
  for i = 1, #rel, 2 do
    local b = string.match(rel[i + 1], '^(%d+):')
    if b and tonumber(b) ~= 0 and string.match(rel[i], '^%d+$') then
      relation[rel[i]] = tonumber(b)
      hidden[#hidden + 1] = rel[i]
    end
  end
end
local outcomes, copied, published = {}, {}, {}
local moved, copies, spent = 0, false, 0
for j = 1, n do
  if spent >= budget then
    break
  end
  local k, a = 7 + 7 * (j - 1), 12 + 3 * (j - 1)
  local target, event, part = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  local t = redis.call('HMGET', KEYS[k], 'id', 'deleted', 'suspended')
  local outcome
  if not t[1] or t[2] or t[3] == '1' then
    outcome = -1
  elseif follow and ((relation[target] and bit.band(relation[target], 3) ~= 0)
      or blocks(redis.call('HGET', KEYS[k + 3], follower))) then
    outcome = -2
  elseif follow then
    outcome = redis.call('ZADD', KEYS[2], 'NX', now, target)
  else
    outcome = redis.call('ZREM', KEYS[2], target)
  end
  outcomes[j] = outcome
  if outcome == 1 then
    -- A chain step drawn earlier (account deletion's undo, or a change left
    -- by a previous version for the sweeper) must not undo this one: both
    -- sides' sequences move to a newly drawn op number.
    local seq = string.format('%d', redis.call('INCR', KEYS[k + 6]) * stride + part)
    local step = follow and 1 or -1
    moved = moved + step
    redis.call('HSET', KEYS[3], target, seq, 'c:' .. target, seq)
    redis.call('HSET', KEYS[k + 2], follower, seq)
    local theirs
    if follow then
      theirs = redis.call('ZADD', KEYS[k + 1], 'NX', now, follower)
    else
      theirs = redis.call('ZREM', KEYS[k + 1], follower)
    end
    -- Counters move with their sets, so they stay equal to the sets' sizes.
    if theirs == 1 then
      redis.call('HINCRBY', KEYS[k], 'followers', step)
    end
    if follow then
      if not relation[target] then
        local newest = redis.call('ZREVRANGE', KEYS[k + 4], 0, cap - 1, 'WITHSCORES')
        if #newest > 0 then
          local pairs = {}
          for i = 1, #newest, 2 do
            -- Timelines keep the whole second (post_whole.lua says why).
            pairs[#pairs + 1] = string.format('%d', math.floor(tonumber(newest[i + 1])))
            pairs[#pairs + 1] = newest[i]
            copied[#copied + 1] = newest[i]
          end
          redis.call('ZADD', KEYS[5], unpack(pairs))
          copies = true
          spent = spent + #pairs / 2
        end
      end
    else
      local gone = redis.call('ZREVRANGE', KEYS[k + 4], 0, cap - 1)
      for _, id in ipairs(redis.call('ZREVRANGE', KEYS[k + 5], 0, cap - 1)) do
        gone[#gone + 1] = id
      end
      if #gone > 0 then
        redis.call('ZREM', KEYS[5], unpack(gone))
        spent = spent + #gone
      end
    end
    published[#published + 1] = event
  end
end
-- Counters move with their sets: the follower's by the chunk's changes.
if moved ~= 0 then
  redis.call('HINCRBY', KEYS[1], 'following', moved)
end
-- The chunk's events as one entry of the follower's shard, in one message.
if #published > 0 then
  -- The shard's marks HASH beside its buffer (one Redis: any key may be named).
  local marks = KEYS[6]:gsub('events$', 'emitted')
  log_append(KEYS[6], marks, ARGV[5], ARGV[6], ARGV[10], tonumber(ARGV[11]), published)
end
-- The home keeps its cap: trimmed once, after every copy of the chunk.
if copies then
  redis.call('ZREMRANGEBYRANK', KEYS[5], 0, -cap - 1)
end
return {hidden, outcomes, copied}
