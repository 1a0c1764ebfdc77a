-- post_whole: a post, status or reply or repost (not a group's, not a
-- reply to a private status, from an author with at most --fanout-inline
-- followers), every step of it, on one Redis. On a cluster, and for the other posts, the same change is
-- the post chain (repost_claim, status_put, author_post, replies_count,
-- trend, the fan-out, emit_once and op_retire, driven from the outbox).
--
-- Atomic: one script writes the status, the author's timelines and count,
-- the parent's replies, the mention and hashtag timelines, the trending
-- buckets (one per trending partition of its tags), every follower's
-- home, and emits the events, so there is nothing to finish after a crash
-- and no outbox entry; a racing unfollow, mute,
-- block or delete runs wholly before or after it, so the fan-out needs no
-- re-check afterwards. Not one slot: it names keys of many users and
-- shards of the event log, which only a single Redis allows (Statuses::post runs it only
-- there).
--
-- KEYS[1] status HASH  KEYS[2] author user HASH  KEYS[3] author profile ZSET
-- KEYS[4] author home ZSET  KEYS[5] author followers ZSET
-- KEYS[6] the status's shard of the event log STREAM  KEYS[7] parent status HASH (a reply; else KEYS[1])
-- KEYS[8] parent's replies ZSET (else KEYS[1])  KEYS[9] the Idempotency-Key's
-- STRING (else KEYS[1])  KEYS[10] the reposted status HASH, KEYS[11] its
-- reposters HASH (else KEYS[1] both)  KEYS[12 .. 11+i] mention and hashtag
-- timelines, then per trending group its bucket ZSET and its seen SET
-- ARGV[1] status id  ARGV[2] posted  ARGV[3] author id  ARGV[4] home cap,
-- or 0: this post does not trim the homes it enters (model::trims_homes)
-- ARGV[5] index cap  ARGV[6] fan-out limit  ARGV[7] a shard's trim (`~N`, `=N`)
-- ARGV[8] PUBLISH (one Redis)
-- ARGV[9] user 0's home key, ARGV[10] user 0's hide key (store::keys
-- names them; a user's are these with `{0}` made `{<id>}`)
-- ARGV[11] "1" a reply  ARGV[12] i, indexed timelines  ARGV[13] g, trending
-- groups (a group: the tags of one trending partition; 0: not counted)
-- ARGV[14] trending TTL  ARGV[15] f, status fields  ARGV[16] e, events
-- ARGV[17] the reposted status's author ("": not a repost)  ARGV[18] user
-- 0's hidden_by key; then per group its number of tags and the tags, the f
-- field name/value pairs
-- (without id), per event its shard's number, STREAM and channel and its
-- body (JSON without "id"), and last the answer
-- kept under the Idempotency-Key ("" when there is none) and its TTL.
-- Returns 1, or "chain" (too many followers: nothing written; the caller
-- runs the chain), or "nouser" (the author is gone: nothing written), or
-- {"dup", the key's first answer}, or {"reposted", the user's first repost
-- of that status}, or "missing" (the reposted status is gone): in these
-- nothing is written.
local sid, posted, uid = ARGV[1], ARGV[2], ARGV[3]
-- Timelines of statuses are scored by the whole second of `posted`
-- (model::timeline_score); statuses of one second tie and Redis orders
-- ties by member, which for snowflake ids (store::ids) is their order, so
-- a timeline's order is the same as by `posted`. A whole number is kept as
-- an integer in a small ZSET's listpack, where a fraction is kept as text
-- that every insert parses again for each entry it passes: a ZADD into a
-- home of 70 entries costs ~4 µs instead of ~20 (bench/zset_scores.sh).
-- Every path into a timeline (the post chain with author_post, follow_home,
-- follow_whole, home_unhide, replies_count, store::fanout) keeps it.
local score = string.format('%d', math.floor(tonumber(posted)))
local cap, icap = tonumber(ARGV[4]), tonumber(ARGV[5])
local i_n, g_n = tonumber(ARGV[12]), tonumber(ARGV[13])
local f_n, e_n = tonumber(ARGV[15]), tonumber(ARGV[16])
if redis.call('EXISTS', KEYS[2]) == 0 then
  return 'nouser'
end
local answer, answer_ttl = ARGV[#ARGV - 1], ARGV[#ARGV]
if answer ~= '' then
  local first = redis.call('GET', KEYS[9])
  if first then
    return {'dup', first}
  end
end
-- The followers, read once: more than the fan-out limit is the chain's.
local followers = redis.call('ZRANGE', KEYS[5], 0, tonumber(ARGV[6]))
if #followers > tonumber(ARGV[6]) then
  return 'chain'
end
-- A repost: the user reposts a status once, and only a live one.
local original_uid = ARGV[17]
if original_uid ~= '' then
  local existing = redis.call('HGET', KEYS[11], uid)
  if existing and existing ~= sid then
    return {'reposted', existing}
  end
  if redis.call('HEXISTS', KEYS[10], 'id') == 0 or redis.call('HEXISTS', KEYS[10], 'deleted') == 1 then
    return 'missing'
  end
  redis.call('HSET', KEYS[11], uid, sid)
  redis.call('HSET', KEYS[10], 'reposts', redis.call('HLEN', KEYS[11]))
end
local at = 19
local groups = {}
for g = 1, g_n do
  local c = tonumber(ARGV[at])
  local tags = {}
  for j = at + 1, at + c do tags[#tags + 1] = ARGV[j] end
  groups[g] = tags
  at = at + 1 + c
end
local fields = {'id', sid}
for j = at, at + 2 * f_n - 1 do fields[#fields + 1] = ARGV[j] end
at = at + 2 * f_n
redis.call('HSET', KEYS[1], unpack(fields))
-- The author: profile, own home, and the count that equals the profile.
redis.call('HINCRBY', KEYS[2], 'posts', redis.call('ZADD', KEYS[3], score, sid))
redis.call('ZADD', KEYS[4], score, sid)
if cap > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -cap - 1)
end
if ARGV[11] == '1' then
  redis.call('ZADD', KEYS[8], score, sid)
  if redis.call('HEXISTS', KEYS[7], 'id') == 1 then
    redis.call('HSET', KEYS[7], 'replies', redis.call('ZCARD', KEYS[8]))
  end
end
for j = 12, 11 + i_n do
  redis.call('ZADD', KEYS[j], score, sid)
  redis.call('ZREMRANGEBYRANK', KEYS[j], 0, -icap - 1)
end
for g, tags in ipairs(groups) do
  local bucket, seen = KEYS[10 + i_n + 2 * g], KEYS[11 + i_n + 2 * g]
  if redis.call('SADD', seen, sid) == 1 then
    -- TTLs set when a tag enters the bucket, as trend.lua does.
    local fresh = false
    for _, t in ipairs(tags) do
      if tonumber(redis.call('ZINCRBY', bucket, 1, t)) == 1 then
        fresh = true
      end
    end
    if fresh then
      redis.call('EXPIRE', bucket, ARGV[14])
      redis.call('EXPIRE', seen, ARGV[14])
    end
  end
end
-- Every follower's home, unless a relation hides the author (or the
-- reposted author) from them (`crate::hides`: any bits but 0). The users
-- whose relations may are in the author's `hidden_by` SET (relate.lua
-- keeps it with the bits), read once instead of every follower's `hide`
-- HASH; only a follower in it has the HASH read, which decides, so an
-- entry the SET kept too long would cost a read and nothing else. It lacks
-- none: relate.lua changes it in the script that changes the bits.
local function split(template)
  local a, b = string.find(template, '{0}', 1, true)
  return template:sub(1, a), template:sub(b)
end
local home_head, home_tail = split(ARGV[9])
local hide_head, hide_tail = split(ARGV[10])
local by_head, by_tail = split(ARGV[18])
local maybe = {}
for _, who in ipairs(original_uid == '' and {uid} or {uid, original_uid}) do
  for _, v in ipairs(redis.call('SMEMBERS', by_head .. who .. by_tail)) do
    maybe[v] = true
  end
end
local function hides(rel)
  if not rel then
    return false
  end
  local b = tonumber(string.match(rel, '^(%d+):'))
  return b ~= nil and b ~= 0
end
local function hidden(f)
  if not maybe[f] then
    return false
  end
  local rel = redis.call('HMGET', hide_head .. f .. hide_tail, uid, original_uid)
  return hides(rel[1]) or hides(rel[2])
end
for _, f in ipairs(followers) do
  if not hidden(f) then
    local home = home_head .. f .. home_tail
    redis.call('ZADD', home, score, sid)
    if cap > 0 then
      redis.call('ZREMRANGEBYRANK', home, 0, -cap - 1)
    end
  end
end
-- The events (the status, its mentions, the repost), each shard's as one
-- entry and one message (`log_append`), in the order given within each,
-- and each shard's entry after the one before (the status's first): the
-- status comes before its mentions on every stream.
local shards, bodies = {}, {}
for j = at, at + 4 * (e_n - 1), 4 do
  local shard = ARGV[j]
  if not bodies[shard] then
    shards[#shards + 1] = {shard, ARGV[j + 1], ARGV[j + 2]}
    bodies[shard] = {}
  end
  bodies[shard][#bodies[shard] + 1] = ARGV[j + 3]
end
local previous = ''
for _, s in ipairs(shards) do
  -- The shard's marks HASH beside its buffer (one Redis: any key may be named).
  local marks = s[2]:gsub('events$', 'emitted')
  previous = log_append(s[2], marks, ARGV[7], s[3], ARGV[8], tonumber(s[1]), bodies[s[1]], previous)
end
if answer ~= '' then
  redis.call('SET', KEYS[9], answer, 'EX', answer_ttl)
end
return 1
