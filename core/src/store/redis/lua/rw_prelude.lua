local FOREVER = 4503599627370496

-- Time left on a hold: the most left on its timeout keys `base:field:rwlock_timeout:k`
-- (k = 1..count); -2 when every key is gone.
local function hold_left(base, field, count)
  local best = -2
  for i = 1, count do
    local p = redis.call('PTTL', base .. ':' .. field .. ':rwlock_timeout:' .. i)
    if p == -1 then return FOREVER end
    if p > best then best = p end
  end
  return best
end

local function is_writer(f)
  return string.sub(f, -6) == ':write'
end

-- Looks at every hold of the hash `h`, drops the dead ones (a hold whose timeout keys all
-- expired; a writer without timeout keys and without a baton token is Redisson's
-- RWriteLock, alive while the hash lives), keeps `mode` right and deletes the hash when
-- no hold is left. Returns freed (something went), the least and the most time left on
-- a live hold (-1: none).
local function rw_scan(h, meta, base)
  local all = redis.call('HGETALL', h)
  local freed, least, most, live, writers = false, -1, -1, 0, 0
  for i = 1, #all, 2 do
    local f = all[i]
    local count = tonumber(all[i + 1])
    if f ~= 'mode' and count then
      local left = hold_left(base, f, count)
      if left == -2 and is_writer(f) and redis.call('HEXISTS', meta, 't:' .. f) == 0 then
        left = redis.call('PTTL', h)
        if left == -1 then left = FOREVER end
      end
      if left <= 0 then
        redis.call('HDEL', h, f)
        redis.call('HDEL', meta, 't:' .. f)
        for k = 1, count do redis.call('DEL', base .. ':' .. f .. ':rwlock_timeout:' .. k) end
        freed = true
      else
        live = live + 1
        if is_writer(f) then writers = writers + 1 end
        if least < 0 or left < least then least = left end
        if left > most then most = left end
      end
    end
  end
  if live == 0 then
    redis.call('DEL', h)
  elseif writers == 0 and redis.call('HGET', h, 'mode') == 'write' then
    redis.call('HSET', h, 'mode', 'read')
  end
  return freed, least, most
end
