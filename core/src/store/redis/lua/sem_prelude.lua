local function member(holder, m1, i)
  if i == 1 then return m1 end
  return holder .. '/' .. i
end

-- How many permits `holder` holds (its members are consecutive from 1).
local function held(z, holder, m1)
  local k = 0
  while redis.call('ZSCORE', z, member(holder, m1, k + 1)) do k = k + 1 end
  return k
end

local function holder_of(m)
  if #m == 16 then
    return (string.gsub(m, '.', function(c) return string.format('%02x', string.byte(c)) end))
  end
  return string.match(m, '^(.+)/%d+$') or m
end

-- Returns expired permits to the count (as Redisson's acquire does) and wakes waiters.
local function sem_purge(n, z, meta, now, channel)
  local dead = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  if #dead == 0 then return 0 end
  for _, m in ipairs(dead) do
    redis.call('ZREM', z, m)
    redis.call('HDEL', meta, 't:' .. holder_of(m))
  end
  if redis.call('EXISTS', n) == 1 then
    redis.call('PUBLISH', channel, redis.call('INCRBY', n, #dead))
  end
  return #dead
end

-- The size rule (crate::state::check_size), beside Redisson's counter `n`: baton records
-- the size of the semaphore that made the counter as `size` in its side hash `meta` (kept
-- without a ttl, as the counter is). Permits are held while the counter stands below the
-- record (baton's permits and Redisson's alike): a handle of another size is refused then
-- (the recorded size is returned). Once every permit is back, another size moves the
-- counter by the difference and is recorded. A counter with no record (Redisson's own)
-- accepts any size. Returns the refusal's recorded size, or nil.
local function sem_size(n, meta, limit)
  local rec = tonumber(redis.call('HGET', meta, 'size'))
  if not rec or rec == limit then return nil end
  local v = tonumber(redis.call('GET', n))
  if not v then
    redis.call('HDEL', meta, 'size')
    return nil
  end
  if v < rec then return rec end
  redis.call('SET', n, v + limit - rec)
  redis.call('HSET', meta, 'size', limit)
  return nil
end
