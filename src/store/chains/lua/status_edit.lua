-- status_edit: a status's new version, by its author, within the edit
-- window and under the most edits; the version history grows by it (the
-- first edit records the status as posted first).
--
-- Atomic: the checks, the fields and the history change together, so a
-- reader never sees a text the history lacks, parallel edits never pass
-- the cap, and an edit racing the status's delete finds it whole or
-- marked. Idempotent: the op number is kept in the HASH (`edit_op`) with
-- the fields it replaced, so a rerun of the same op changes nothing and
-- answers what the first run saw. One slot: the status's ({s<id>}).
--
-- KEYS[1] status HASH  KEYS[2] its versions LIST (JSON, oldest first)
-- ARGV[1] editor uid  ARGV[2] op number  ARGV[3] message  ARGV[4] hashtags
-- JSON  ARGV[5] mentions JSON  ARGV[6] mentioned uids JSON  ARGV[7] time
-- ARGV[8] window (s)  ARGV[9] most edits  ARGV[10] the new version's JSON
-- Returns {"ok"|"again", previous message, previous hashtags JSON,
-- previous mentioned uids JSON, edits so far}, or {"missing"},
-- {"forbidden"}, {"repost"}, {"window"}, {"limit"}.
local f = redis.call('HMGET', KEYS[1], 'uid', 'posted', 'deleted', 'edit_op',
  'message', 'hashtags', 'mention_uids', 'mentions', 'repost_of', 'edits',
  'edit_prev_message', 'edit_prev_hashtags', 'edit_prev_mention_uids')
if not f[1] or f[3] then
  return {'missing'}
end
if f[4] == ARGV[2] then
  return {'again', f[11] or '', f[12] or '[]', f[13] or '[]', f[10] or '0'}
end
if f[1] ~= ARGV[1] then
  return {'forbidden'}
end
if f[9] then
  return {'repost'}
end
if tonumber(ARGV[7]) - tonumber(f[2]) > tonumber(ARGV[8]) then
  return {'window'}
end
local edits = tonumber(f[10] or '0')
if edits >= tonumber(ARGV[9]) then
  return {'limit'}
end
if redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('RPUSH', KEYS[2], '{"message":' .. cjson.encode(f[5] or '') ..
    ',"hashtags":' .. (f[6] or '[]') .. ',"mentions":' .. (f[8] or '[]') ..
    ',"at":' .. f[2] .. '}')
end
redis.call('RPUSH', KEYS[2], ARGV[10])
redis.call('HSET', KEYS[1], 'message', ARGV[3], 'hashtags', ARGV[4],
  'mentions', ARGV[5], 'mention_uids', ARGV[6], 'edited_at', ARGV[7],
  'edits', edits + 1, 'edit_op', ARGV[2],
  'edit_prev_message', f[5] or '', 'edit_prev_hashtags', f[6] or '[]',
  'edit_prev_mention_uids', f[7] or '[]')
return {'ok', f[5] or '', f[6] or '[]', f[7] or '[]', tostring(edits + 1)}
