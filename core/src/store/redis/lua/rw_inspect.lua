local base = ARGV[1]
local holds = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local f = all[i]
  local count = tonumber(all[i + 1])
  if f ~= 'mode' and count then
    local t = redis.call('HGET', KEYS[5], 't:' .. f)
    local left = hold_left(base, f, count)
    if left == -2 and is_writer(f) and not t then left = redis.call('PTTL', KEYS[1]) end
    if left == -1 then left = FOREVER end
    if left > 0 then table.insert(holds, {f, count, left, tonumber(t) or 0}) end
  end
end
return {now_ms(), redis.call('GET', KEYS[4]), holds,
  redis.call('LRANGE', KEYS[2], 0, -1), redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')}
