local t = tonumber(ARGV[1])
local c = tonumber(redis.call('GET', KEYS[1])) or 0
if c < t then redis.call('SET', KEYS[1], ARGV[1]) end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
elseif c > t and KEYS[3] and redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
  local p = redis.call('PTTL', KEYS[3])
  if p > 0 then redis.call('PEXPIRE', KEYS[2], p) end
end
return 1
