local v = tonumber(redis.call('GET', KEYS[1]))
if v and v > 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[2], 1)
return 1
