-- log_lost: prepended to the scripts that read the event log
-- (store::plumbing::scripts). What one shard's buffer lost: its oldest id
-- held ("" if none), "1" if it was ever trimmed, and its newest id deleted
-- ("" if none), from XINFO STREAM.
local function log_lost(stream)
  local first, trimmed, deleted = '', '0', ''
  if redis.call('EXISTS', stream) == 1 then
    local info = redis.call('XINFO', 'STREAM', stream)
    local f = {}
    for k = 1, #info, 2 do
      f[info[k]] = info[k + 1]
    end
    if f['recorded-first-entry-id'] ~= '0-0' then first = f['recorded-first-entry-id'] end
    if tonumber(f['entries-added']) > tonumber(f['length']) then trimmed = '1' end
    if f['max-deleted-entry-id'] ~= '0-0' then deleted = f['max-deleted-entry-id'] end
  end
  return first, trimmed, deleted
end

