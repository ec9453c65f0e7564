local holder = ARGV[1]
local want = tonumber(ARGV[2])
local size = sem_size(KEYS[1], KEYS[3], tonumber(ARGV[3]))
if size then return {6, size} end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], ARGV[3])
  redis.call('HSET', KEYS[3], 'size', ARGV[3])
end
local k = tonumber(redis.call('HGET', KEYS[3], 'p:' .. holder)) or 0
if k > 0 then want = 1 end
if (tonumber(redis.call('GET', KEYS[1])) or 0) < want then return {0, -1} end
redis.call('DECRBY', KEYS[1], want)
redis.call('HINCRBY', KEYS[3], 'p:' .. holder, want)
if k > 0 then
  local t = redis.call('HGET', KEYS[3], 't:' .. holder) or redis.call('GET', KEYS[2]) or 0
  return {1, tonumber(t), k + want, 0}
end
local t, tt = next_token(KEYS[2])
redis.call('HSET', KEYS[3], 't:' .. holder, tt)
return {1, t, want, 1}
