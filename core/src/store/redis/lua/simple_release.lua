local holder = ARGV[1]
if redis.call('GET', KEYS[1]) ~= holder then return {0} end
local c = tonumber(redis.call('HGET', KEYS[2], 'c:' .. holder)) or 1
local k = tonumber(ARGV[2])
if k == 0 then k = c end
if k > c then return {3, c} end
if k < c then
  redis.call('HSET', KEYS[2], 'c:' .. holder, c - k)
  return {2, c - k}
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[3], 0)
forget_counter(KEYS[3])
return 1
