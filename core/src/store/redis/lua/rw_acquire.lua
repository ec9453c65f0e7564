local holder, lease, base = ARGV[1], tonumber(ARGV[2]), ARGV[7]
local reading = ARGV[3] == 'r'
local now = now_ms()
local qfreed = 0
if redis.call('EXISTS', KEYS[2]) == 1 then qfreed = purge_queue(KEYS[2], KEYS[3], now) end
local mode = redis.call('HGET', KEYS[1], 'mode')
if not mode and redis.call('EXISTS', KEYS[1]) == 1 then return {5} end
local freed, least = false, -1
if mode then
  freed, least = rw_scan(KEYS[1], KEYS[5], base)
  mode = redis.call('HGET', KEYS[1], 'mode')
end
local c = redis.call('HGET', KEYS[1], holder)
if c then
  c = redis.call('HINCRBY', KEYS[1], holder, 1)
  redis.call('SET', base .. ':' .. holder .. ':rwlock_timeout:' .. c, 1, 'PX', lease)
  if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
  stretch(KEYS[5], lease, true)
  local t = redis.call('HGET', KEYS[5], 't:' .. holder) or redis.call('GET', KEYS[4]) or 0
  return {1, tonumber(t), c, 0}
end
local free
if reading then
  free = (mode == 'write' and redis.call('HEXISTS', KEYS[1], ARGV[4]) == 1)
    or ((not mode or mode == 'read') and redis.call('LLEN', KEYS[2]) == 0)
else
  if redis.call('HEXISTS', KEYS[1], ARGV[4]) == 1 then return {4} end
  local first = redis.call('LINDEX', KEYS[2], 0)
  free = (not mode) and (not first or first == holder)
end
if free then
  unqueue(KEYS[2], KEYS[3], holder)
  local t, tt = next_token(KEYS[4])
  if not reading then
    redis.call('HSET', KEYS[1], 'mode', 'write')
  elseif not mode then
    redis.call('HSET', KEYS[1], 'mode', 'read')
  end
  redis.call('HSET', KEYS[1], holder, 1)
  redis.call('SET', base .. ':' .. holder .. ':rwlock_timeout:1', 1, 'PX', lease)
  if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
  redis.call('HSET', KEYS[5], 't:' .. holder, tt)
  stretch(KEYS[5], lease, true)
  return {1, t, 1, 1}
end
if not reading and ARGV[5] == '1' then enqueue(KEYS[2], KEYS[3], holder, now, tonumber(ARGV[6])) end
if freed or qfreed > 0 then redis.call('PUBLISH', ARGV[8], 1) end
return {0, least, tonumber(redis.call('GET', KEYS[4])) or 0}
