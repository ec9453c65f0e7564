local holder, lease = ARGV[1], tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[5]) == 0 then
  local t, tt = next_token(KEYS[4])
  redis.call('HSET', KEYS[1], holder, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  return t
end
