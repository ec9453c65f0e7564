local holder, base = ARGV[1], ARGV[3]
if not redis.call('HGET', KEYS[1], 'mode') then return {0} end
rw_scan(KEYS[1], KEYS[2], base)
local c = redis.call('HGET', KEYS[1], holder)
if not c then return {0} end
c = tonumber(c)
local k = tonumber(ARGV[2])
if k == 0 then k = c end
if k > c then return {3, c} end
for i = c - k + 1, c do redis.call('DEL', base .. ':' .. holder .. ':rwlock_timeout:' .. i) end
if k < c then
  redis.call('HSET', KEYS[1], holder, c - k)
  return {2, c - k}
end
redis.call('HDEL', KEYS[1], holder)
redis.call('HDEL', KEYS[2], 't:' .. holder)
local _, _, most = rw_scan(KEYS[1], KEYS[2], base)
if most < 0 then
  -- Redisson: a write unlock publishes 1 (wake every waiter), a read unlock 0.
  if is_writer(holder) then redis.call('PUBLISH', ARGV[4], 1) else redis.call('PUBLISH', ARGV[4], 0) end
  forget_counter(KEYS[3])
else
  if most < FOREVER then redis.call('PEXPIRE', KEYS[1], most) end
  -- A writer left its own readers behind (downgrade): other readers may enter now.
  if is_writer(holder) then redis.call('PUBLISH', ARGV[4], 1) end
end
return {1}
