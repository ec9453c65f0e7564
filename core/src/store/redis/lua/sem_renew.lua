local holder, m1, lease = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms(ARGV[5])
sem_purge(KEYS[1], KEYS[2], KEYS[3], now, ARGV[4])
local k = held(KEYS[2], holder, m1)
if k == 0 then return 0 end
for i = 1, k do redis.call('ZADD', KEYS[2], 'XX', now + lease, member(holder, m1, i)) end
return 1
