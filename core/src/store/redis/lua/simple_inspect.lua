return {now_ms(), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[3]),
  redis.call('GET', KEYS[2])}
