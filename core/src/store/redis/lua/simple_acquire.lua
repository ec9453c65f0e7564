local holder, lease = ARGV[1], tonumber(ARGV[2])
local v = redis.call('GET', KEYS[1])
if v == holder then
  local p = redis.call('PTTL', KEYS[1])
  if p >= 0 and p < lease then
    redis.call('PEXPIRE', KEYS[1], lease)
    p = lease
  end
  if not redis.call('HGET', KEYS[3], 'c:' .. holder) then redis.call('HSET', KEYS[3], 'c:' .. holder, 1) end
  local c = redis.call('HINCRBY', KEYS[3], 'c:' .. holder, 1)
  if p > 0 then redis.call('PEXPIRE', KEYS[3], p) end
  local t = redis.call('HGET', KEYS[3], 't:' .. holder) or redis.call('GET', KEYS[2]) or 0
  return {1, tonumber(t), c, 0}
end
if v then
  local p = redis.call('PTTL', KEYS[1])
  if p < 0 then p = -1 end
  return {0, p, tonumber(redis.call('GET', KEYS[2])) or 0}
end
-- This holder's two fields are overwritten (a record left by an expired hold of the same
-- holder must not count); other holders' stale fields are never read and go with the hash.
-- The steps that can fail (a key of another type: WRONGTYPE) come before the hold itself,
-- so a script that fails leaves no hold behind (Redis does not roll a script back).
local t, tt = next_token(KEYS[2])
redis.call('HSET', KEYS[3], 't:' .. holder, tt, 'c:' .. holder, 1)
redis.call('PEXPIRE', KEYS[3], lease)
redis.call('SET', KEYS[1], holder, 'PX', lease)
return t
