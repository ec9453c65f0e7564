return redis.call('HEXISTS', KEYS[1], 'p:' .. ARGV[1])
