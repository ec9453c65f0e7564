redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('LREM', KEYS[1], 0, ARGV[1]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 1)
return 1
