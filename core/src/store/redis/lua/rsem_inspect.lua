return {now_ms(), redis.call('HGETALL', KEYS[2]), redis.call('GET', KEYS[1])}
