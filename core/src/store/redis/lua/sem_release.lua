local holder, m1 = ARGV[1], ARGV[2]
sem_purge(KEYS[1], KEYS[2], KEYS[3], now_ms(ARGV[5]), ARGV[4])
local k = held(KEYS[2], holder, m1)
if k == 0 then return {0} end
local n = tonumber(ARGV[3])
if n == 0 then n = k end
if n > k then return {3, k} end
for i = k - n + 1, k do redis.call('ZREM', KEYS[2], member(holder, m1, i)) end
local v = n
if redis.call('EXISTS', KEYS[1]) == 1 then v = redis.call('INCRBY', KEYS[1], n) end
redis.call('PUBLISH', ARGV[4], v)
if n == k then
  redis.call('HDEL', KEYS[3], 't:' .. holder)
  if redis.call('ZCARD', KEYS[2]) == 0 then forget_semaphore(KEYS[1], KEYS[3], KEYS[4]) end
  return {1}
end
return {2, k - n}
