-- group_member: every change of a group's membership, roles and join
-- requests, checked and applied in one step. Atomic: the checks (the
-- actor's role, the last owner, the cap) and the writes run as one script,
-- so two owners demoting each other, or a join racing a removal, leave a
-- group that still has an owner and counts that equal its sets. One slot:
-- the group's keys.
--
-- KEYS[1] group HASH  KEYS[2] members ZSET  KEYS[3] roles HASH
-- KEYS[4] requests ZSET
-- ARGV[1] action: join | leave | add | authorize | reject | role | remove
-- | purge (an account deleted: out whatever its role; when it was the
-- last owner, the longest-standing other member becomes an owner)
-- ARGV[2] actor  ARGV[3] target (the actor for join and leave)
-- ARGV[4] now  ARGV[5] member cap  ARGV[6] role (for `role`)
-- Returns {outcome, role or '', requested '1'/'0'}; outcome is one of
-- ok, missing (no group), forbidden, not_member, no_request,
-- last_owner, full.
local action, actor, target = ARGV[1], ARGV[2], ARGV[3]
local now, cap = ARGV[4], tonumber(ARGV[5])
local kind = redis.call('HGET', KEYS[1], 'kind')
if not kind then return {'missing', '', '0'} end

local function role_of(u) return redis.call('HGET', KEYS[3], u) or '' end
local function state(u)
  local requested = redis.call('ZSCORE', KEYS[4], u) and '1' or '0'
  return {'ok', role_of(u), requested}
end
local function recount()
  local owners = 0
  -- The owners count and the owner field follow every role change.
  for _, r in ipairs(redis.call('HVALS', KEYS[3])) do
    if r == 'owner' then owners = owners + 1 end
  end
  redis.call('HSET', KEYS[1], 'members', redis.call('ZCARD', KEYS[2]), 'owners', owners)
  local shown = redis.call('HGET', KEYS[1], 'owner')
  if not shown or redis.call('HGET', KEYS[3], shown) ~= 'owner' then
    local all = redis.call('HGETALL', KEYS[3])
    local pick = ''
    for i = 1, #all, 2 do
      if all[i + 1] == 'owner' and (pick == '' or tonumber(all[i]) < tonumber(pick)) then
        pick = all[i]
      end
    end
    redis.call('HSET', KEYS[1], 'owner', pick)
  end
end
local function owners() return tonumber(redis.call('HGET', KEYS[1], 'owners') or '0') end
local function admit(u)
  if redis.call('ZSCORE', KEYS[2], u) then return nil end
  if redis.call('ZCARD', KEYS[2]) >= cap then return 'full' end
  redis.call('ZADD', KEYS[2], now, u)
  redis.call('HSET', KEYS[3], u, 'member')
  redis.call('ZREM', KEYS[4], u)
  recount()
  return nil
end
local function drop(u)
  redis.call('ZREM', KEYS[2], u)
  redis.call('HDEL', KEYS[3], u)
  recount()
end

if action == 'join' then
  if role_of(actor) ~= '' then return state(actor) end
  if kind == 'private' then
    if not redis.call('ZSCORE', KEYS[4], actor) then
      redis.call('ZADD', KEYS[4], now, actor)
    end
    return state(actor)
  end
  local err = admit(actor)
  if err then return {err, '', '0'} end
  return state(actor)
elseif action == 'leave' then
  redis.call('ZREM', KEYS[4], actor)
  local r = role_of(actor)
  if r == '' then return state(actor) end
  if r == 'owner' and owners() <= 1 then return {'last_owner', r, '0'} end
  drop(actor)
  return state(actor)
end

if action == 'purge' then
  redis.call('ZREM', KEYS[4], actor)
  local r = role_of(actor)
  if r == '' then return state(actor) end
  if r == 'owner' and owners() <= 1 then
    for _, u in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
      if u ~= actor then
        redis.call('HSET', KEYS[3], u, 'owner')
        break
      end
    end
  end
  drop(actor)
  return state(actor)
end

-- The rest are management calls: the actor's role decides.
local mine = role_of(actor)
if action == 'add' or action == 'authorize' or action == 'reject' then
  if mine ~= 'owner' and mine ~= 'moderator' then return {'forbidden', '', '0'} end
  if action == 'add' then
    local err = admit(target)
    if err then return {err, '', '0'} end
    return state(target)
  end
  if role_of(target) ~= '' and action == 'authorize' then return state(target) end
  if not redis.call('ZSCORE', KEYS[4], target) then return {'no_request', '', '0'} end
  if action == 'reject' then
    redis.call('ZREM', KEYS[4], target)
    return state(target)
  end
  local err = admit(target)
  if err then return {err, '', '0'} end
  return state(target)
elseif action == 'role' then
  if mine ~= 'owner' then return {'forbidden', '', '0'} end
  local theirs = role_of(target)
  if theirs == '' then return {'not_member', '', '0'} end
  if theirs == 'owner' and ARGV[6] ~= 'owner' and owners() <= 1 then
    return {'last_owner', theirs, '0'}
  end
  redis.call('HSET', KEYS[3], target, ARGV[6])
  recount()
  return state(target)
elseif action == 'remove' then
  local theirs = role_of(target)
  if mine ~= 'owner' and mine ~= 'moderator' then return {'forbidden', '', '0'} end
  if theirs == '' then return {'not_member', '', '0'} end
  if mine == 'moderator' and theirs ~= 'member' and target ~= actor then
    return {'forbidden', '', '0'}
  end
  if theirs == 'owner' and owners() <= 1 then return {'last_owner', theirs, '0'} end
  drop(target)
  return state(target)
end
return {'invalid', '', '0'}
