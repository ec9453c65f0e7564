return {now_ms(ARGV[1]), redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[1]),
  redis.call('LRANGE', KEYS[2], 0, -1), redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES'),
  redis.call('GET', KEYS[4]), redis.call('HGETALL', KEYS[5])}
