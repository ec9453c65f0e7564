-- KEYS: the resource (a hash {value, fence}). ARGV: token, value.
-- Writes unless the resource saw a larger token; 1: written, 0: refused.
local seen = tonumber(redis.call('hget', KEYS[1], 'fence') or '-1')
if tonumber(ARGV[1]) < seen then return 0 end
redis.call('hset', KEYS[1], 'value', ARGV[2], 'fence', ARGV[1])
return 1
