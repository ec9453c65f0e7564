if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
stretch(KEYS[2], tonumber(ARGV[2]), false)
return 1
