-- `client`: the caller's wall clock in ms with `?clock=client` (Redisson's scores); empty
-- or absent: the server's `TIME`.
local function now_ms(client)
  if client and client ~= '' then return tonumber(client) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Gives `key` a ttl of at least `ms`; a key without ttl gets one only when `ours`
-- (keys Redisson created without a ttl keep none).
local function stretch(key, ms, ours)
  local p = redis.call('PTTL', key)
  if (p == -1 and ours) or (p >= 0 and p < ms) then redis.call('PEXPIRE', key, ms) end
end

-- A queue (list `q` of ids in arrival order + zset `z` of id -> expiry, ms on `now_ms`'s clock):
-- drops entries whose place expired, and ids without a place. Returns how many went.
local function purge_queue(q, z, now)
  local dead = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, w in ipairs(dead) do
    redis.call('ZREM', z, w)
    redis.call('LREM', q, 0, w)
  end
  local n = #dead
  while true do
    local h = redis.call('LINDEX', q, 0)
    if not h or redis.call('ZSCORE', z, h) then break end
    redis.call('LPOP', q)
    n = n + 1
  end
  return n
end

-- Takes or refreshes `who`'s place, which lives `ttl` ms unless refreshed.
local function enqueue(q, z, who, now, ttl)
  local zfresh = redis.call('EXISTS', z) == 0
  local qfresh = redis.call('EXISTS', q) == 0
  if redis.call('ZADD', z, now + ttl, who) == 1 then redis.call('RPUSH', q, who) end
  stretch(z, ttl, zfresh)
  stretch(q, ttl, qfresh)
end

local function unqueue(q, z, who)
  redis.call('ZREM', z, who)
  return redis.call('LREM', q, 0, who)
end
