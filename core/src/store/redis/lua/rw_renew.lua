local holder, lease, base = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local c = tonumber(redis.call('HGET', KEYS[1], holder))
if not c or hold_left(base, holder, c) == -2 then return 0 end
for i = 1, c do redis.call('SET', base .. ':' .. holder .. ':rwlock_timeout:' .. i, 1, 'PX', lease) end
if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
stretch(KEYS[2], lease, true)
return 1
