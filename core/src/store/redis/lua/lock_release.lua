redis.call('HDEL', KEYS[4], 't:' .. holder)
if redis.call('EXISTS', KEYS[2]) == 1 then
  purge_queue(KEYS[2], KEYS[3], now_ms(ARGV[4]))
  local h = redis.call('LINDEX', KEYS[2], 0)
  if h then redis.call('PUBLISH', ARGV[3] .. ':' .. h, 0) end
end
redis.call('PUBLISH', ARGV[3], 0)
if redis.call('EXISTS', KEYS[1]) == 0 then forget_counter(KEYS[5]) end
return 1
