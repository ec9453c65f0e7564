local v = tonumber(redis.call('GET', KEYS[1]))
if not v then return 0 end
if v <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
v = redis.call('DECR', KEYS[1])
if v <= 0 then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[1], 0)
  return 0
end
return v
