-- Removes the fencing counter `k` of a name that nothing holds any more, so that a free
-- name leaves no key behind, when the next grant's token is above it anyway: the counter
-- stands below the server's clock in µs, and every token is at least that clock
-- (`next_token`), as long as the clock does not step back. `k` is nil with `?free=keep`.
-- A counter a little above the clock (a `redlock://` token floor) expires once the clock
-- passes it; one far above (a clock stepped back) stays.
local function forget_counter(k)
  if not k then return end
  local c = tonumber(redis.call('GET', k))
  if not c then return end
  local now = redis.call('TIME')
  local us = tonumber(now[1]) * 1000000 + tonumber(now[2])
  if c < us then
    redis.call('DEL', k)
  elseif c - us <= 2000000 then
    redis.call('PEXPIRE', k, math.floor((c - us) / 1000) + 1)
  end
end
-- A semaphore's side hash `meta` and count `n` once every permit is back: they hold only
-- the size baton recorded and a count equal to it, which the next grant makes again.
local function forget_semaphore(n, meta, counter)
  if not counter then return end
  local size = redis.call('HGET', meta, 'size')
  if redis.call('HLEN', meta) > (size and 1 or 0) then return end
  if size and redis.call('GET', n) == size then redis.call('DEL', n, meta) end
  forget_counter(counter)
end
