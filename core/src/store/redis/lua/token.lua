-- The next fencing token of the counter `k`: above the last one, and at least the server's
-- clock (`TIME`) in µs, so that a counter lost with a restart without persistence or a
-- failover to a replica that lagged still yields tokens above every earlier one (as long
-- as the servers' clocks do not step back). Returned as a number (for replies) and as
-- text (for storing: Redis writes a Lua number this large in %.14g form, rounded).
--
-- An acquire may end its arguments with a floor (a marker no name can hold, then the least
-- token): `redlock://` proposes one to every node of a round, ahead of their clocks, so
-- that they answer the same token and none needs it written back (`redlock/acquire.rs`).
local function next_token(k)
  local now = redis.call('TIME')
  local t = math.max((tonumber(redis.call('GET', k)) or 0) + 1, tonumber(now[1]) * 1000000 + tonumber(now[2]))
  if ARGV[#ARGV - 1] == '\0token-floor' then t = math.max(t, tonumber(ARGV[#ARGV]) or 0) end
  local text = string.format('%.0f', t)
  redis.call('SET', k, text)
  return t, text
end
