local holder = ARGV[1]
local k = tonumber(redis.call('HGET', KEYS[2], 'p:' .. holder)) or 0
if k == 0 then return {0} end
local n = tonumber(ARGV[2])
if n == 0 then n = k end
if n > k then return {3, k} end
redis.call('PUBLISH', ARGV[3], redis.call('INCRBY', KEYS[1], n))
if n == k then
  redis.call('HDEL', KEYS[2], 'p:' .. holder, 't:' .. holder)
  forget_semaphore(KEYS[1], KEYS[2], KEYS[3])
  return {1}
end
redis.call('HSET', KEYS[2], 'p:' .. holder, k - n)
return {2, k - n}
