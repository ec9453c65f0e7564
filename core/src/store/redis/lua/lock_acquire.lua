local f, e, qttl, clock, channel = string.match(ARGV[3], '^(%d)(%d):(%d+):([^:]*):(.*)$')
local fair = f == '1'
local hasq = redis.call('EXISTS', KEYS[2]) == 1
local now = 0
if hasq or fair then now = now_ms(clock) end
local head_before = false
if hasq then
  head_before = redis.call('LINDEX', KEYS[2], 0)
  purge_queue(KEYS[2], KEYS[3], now)
end
local c = redis.call('HGET', KEYS[1], holder)
if c then
  c = redis.call('HINCRBY', KEYS[1], holder, 1)
  if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
  stretch(KEYS[5], lease, false)
  local t = redis.call('HGET', KEYS[5], 't:' .. holder) or redis.call('GET', KEYS[4]) or 0
  return {1, tonumber(t), c, 0}
end
local head = false
if hasq then head = redis.call('LINDEX', KEYS[2], 0) end
if redis.call('EXISTS', KEYS[1]) == 0 and (not fair or not head or head == holder) then
  if hasq then unqueue(KEYS[2], KEYS[3], holder) end
  local t, tt = next_token(KEYS[4])
  redis.call('HSET', KEYS[1], holder, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('DEL', KEYS[5])
  return {1, t, 1, 1}
end
if fair and e == '1' then enqueue(KEYS[2], KEYS[3], holder, now, tonumber(qttl)) end
if hasq then
  -- A dead head went while the lock is free: the new head may proceed.
  local h = redis.call('LINDEX', KEYS[2], 0)
  if h and h ~= head_before and h ~= holder and redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('PUBLISH', channel .. ':' .. h, 0)
  end
end
local p = redis.call('PTTL', KEYS[1])
if p < 0 then p = -1 end
return {0, p, tonumber(redis.call('GET', KEYS[4])) or 0}
