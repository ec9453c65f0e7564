local holder, m1, lease = ARGV[1], ARGV[2], tonumber(ARGV[5])
local now = now_ms(ARGV[7])
sem_purge(KEYS[1], KEYS[2], KEYS[4], now, ARGV[6])
local size = sem_size(KEYS[1], KEYS[4], tonumber(ARGV[4]))
if size then return {6, size} end
if redis.call('EXISTS', KEYS[1]) == 0 then
  local v = tonumber(ARGV[4]) - redis.call('ZCARD', KEYS[2])
  if v < 0 then v = 0 end
  redis.call('SET', KEYS[1], v)
  redis.call('HSET', KEYS[4], 'size', ARGV[4])
end
-- No ttl on the side hash: it holds the size record as long as the counter lives; the
-- tokens in it go with their permits (release, purge).
redis.call('PERSIST', KEYS[4])
local avail = tonumber(redis.call('GET', KEYS[1])) or 0
local k = held(KEYS[2], holder, m1)
local want = tonumber(ARGV[3])
if k > 0 then want = 1 end
if avail >= want then
  redis.call('DECRBY', KEYS[1], want)
  local exp = now + lease
  if k > 0 then
    local old = tonumber(redis.call('ZSCORE', KEYS[2], m1))
    if old > exp then exp = old end
    for i = 1, k + 1 do redis.call('ZADD', KEYS[2], exp, member(holder, m1, i)) end
    local t = redis.call('HGET', KEYS[4], 't:' .. holder) or redis.call('GET', KEYS[3]) or 0
    return {1, tonumber(t), k + 1, 0}
  end
  for i = 1, want do redis.call('ZADD', KEYS[2], exp, member(holder, m1, i)) end
  local t, tt = next_token(KEYS[3])
  redis.call('HSET', KEYS[4], 't:' .. holder, tt)
  return {1, t, want, 1}
end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local retry = -1
if first[2] then
  retry = tonumber(first[2]) - now
  if retry < 1 then retry = 1 end
end
return {0, retry, tonumber(redis.call('GET', KEYS[3])) or 0}
