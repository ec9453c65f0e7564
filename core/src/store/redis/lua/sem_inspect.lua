return {now_ms(ARGV[1]), redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'), redis.call('GET', KEYS[2]),
  redis.call('HGETALL', KEYS[3])}
