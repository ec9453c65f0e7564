local holder = ARGV[1]
local c = redis.call('HGET', KEYS[1], holder)
if not c then return {0} end
c = tonumber(c)
local k = tonumber(ARGV[2])
if k == 0 then k = c end
if k > c then return {3, c} end
if k < c then
  redis.call('HSET', KEYS[1], holder, c - k)
  return {2, c - k}
end
redis.call('HDEL', KEYS[1], holder)
if redis.call('EXISTS', KEYS[2], KEYS[4]) == 0 then
  redis.call('PUBLISH', ARGV[3], 0)
  forget_counter(KEYS[5])
  return 1
end
