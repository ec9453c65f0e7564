local head = redis.call('LINDEX', KEYS[1], 0)
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('LREM', KEYS[1], 0, ARGV[1]) == 0 then return 0 end
if head == ARGV[1] and redis.call('EXISTS', KEYS[3]) == 0 then
  local h = redis.call('LINDEX', KEYS[1], 0)
  if h then redis.call('PUBLISH', ARGV[2] .. ':' .. h, 0) end
end
return 1
