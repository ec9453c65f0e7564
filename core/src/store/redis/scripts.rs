//! The Lua scripts: every state change of a primitive is one of these, run atomically by
//! the server and called by SHA (`EVALSHA`; loaded once per connection's server, reloaded
//! on `NOSCRIPT`). They keep Redisson's layouts (docs/redis-layout.md) and implement the
//! rules of `crate::state` (the reference every store matches) on the server's clock
//! (`TIME`) — except that with `?clock=client` (`clock`) the fair-lock queue and permit
//! scripts take `now` from the caller, as Redisson's do.
//!
//! Reply conventions shared by the scripts:
//! - acquire: `{1, token, count, fresh}` granted (or the bare integer `token`: a fresh
//!   grant, count 1 — both lock layouts answer so uncontended), `{0, retry_ms, counter}`
//!   busy (`-1`: unknown; `counter`: the name's token counter, which `redlock://` reads
//!   from every node), `{4}` refused upgrade, `{5}` the name holds another kind of object;
//! - release: `{0}` not held, `{1}` (or the bare integer `1`) freed, `{2, left}` still
//!   held, `{3, held}` more than held asked back;
//! - renew: `1` renewed, `0` not held.

use std::sync::LazyLock;

use redis::Script;

/// Helpers every script may use.
macro_rules! prelude {
    () => {
        r#"
-- `client`: the caller's wall clock in ms with `?clock=client` (Redisson's scores); empty
-- or absent: the server's `TIME`.
local function now_ms(client)
  if client and client ~= '' then return tonumber(client) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Gives `key` a ttl of at least `ms`; a key without ttl gets one only when `ours`
-- (keys Redisson created without a ttl keep none).
local function stretch(key, ms, ours)
  local p = redis.call('PTTL', key)
  if (p == -1 and ours) or (p >= 0 and p < ms) then redis.call('PEXPIRE', key, ms) end
end

-- A queue (list `q` of ids in arrival order + zset `z` of id -> expiry, ms on `now_ms`'s clock):
-- drops entries whose place expired, and ids without a place. Returns how many went.
local function purge_queue(q, z, now)
  local dead = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, w in ipairs(dead) do
    redis.call('ZREM', z, w)
    redis.call('LREM', q, 0, w)
  end
  local n = #dead
  while true do
    local h = redis.call('LINDEX', q, 0)
    if not h or redis.call('ZSCORE', z, h) then break end
    redis.call('LPOP', q)
    n = n + 1
  end
  return n
end

-- Takes or refreshes `who`'s place, which lives `ttl` ms unless refreshed.
local function enqueue(q, z, who, now, ttl)
  local zfresh = redis.call('EXISTS', z) == 0
  local qfresh = redis.call('EXISTS', q) == 0
  if redis.call('ZADD', z, now + ttl, who) == 1 then redis.call('RPUSH', q, who) end
  stretch(z, ttl, zfresh)
  stretch(q, ttl, qfresh)
end

local function unqueue(q, z, who)
  redis.call('ZREM', z, who)
  return redis.call('LREM', q, 0, who)
end
"#
    };
}

/// Read-write lock helpers: hold liveness from Redisson's per-hold timeout keys.
macro_rules! rw_prelude {
    () => {
        r#"
local FOREVER = 4503599627370496

-- Time left on a hold: the most left on its timeout keys `base:field:rwlock_timeout:k`
-- (k = 1..count); -2 when every key is gone.
local function hold_left(base, field, count)
  local best = -2
  for i = 1, count do
    local p = redis.call('PTTL', base .. ':' .. field .. ':rwlock_timeout:' .. i)
    if p == -1 then return FOREVER end
    if p > best then best = p end
  end
  return best
end

local function is_writer(f)
  return string.sub(f, -6) == ':write'
end

-- Looks at every hold of the hash `h`, drops the dead ones (a hold whose timeout keys all
-- expired; a writer without timeout keys and without a baton token is Redisson's
-- RWriteLock, alive while the hash lives), keeps `mode` right and deletes the hash when
-- no hold is left. Returns freed (something went), the least and the most time left on
-- a live hold (-1: none).
local function rw_scan(h, meta, base)
  local all = redis.call('HGETALL', h)
  local freed, least, most, live, writers = false, -1, -1, 0, 0
  for i = 1, #all, 2 do
    local f = all[i]
    local count = tonumber(all[i + 1])
    if f ~= 'mode' and count then
      local left = hold_left(base, f, count)
      if left == -2 and is_writer(f) and redis.call('HEXISTS', meta, 't:' .. f) == 0 then
        left = redis.call('PTTL', h)
        if left == -1 then left = FOREVER end
      end
      if left <= 0 then
        redis.call('HDEL', h, f)
        redis.call('HDEL', meta, 't:' .. f)
        for k = 1, count do redis.call('DEL', base .. ':' .. f .. ':rwlock_timeout:' .. k) end
        freed = true
      else
        live = live + 1
        if is_writer(f) then writers = writers + 1 end
        if least < 0 or left < least then least = left end
        if left > most then most = left end
      end
    end
  end
  if live == 0 then
    redis.call('DEL', h)
  elseif writers == 0 and redis.call('HGET', h, 'mode') == 'write' then
    redis.call('HSET', h, 'mode', 'read')
  end
  return freed, least, most
end
"#
    };
}

/// Permit helpers: one zset member per permit (`RPermitExpirableSemaphore`), score =
/// expiry in ms on `now_ms`'s clock.
macro_rules! sem_prelude {
    () => {
        r#"
local function member(holder, m1, i)
  if i == 1 then return m1 end
  return holder .. '/' .. i
end

-- How many permits `holder` holds (its members are consecutive from 1).
local function held(z, holder, m1)
  local k = 0
  while redis.call('ZSCORE', z, member(holder, m1, k + 1)) do k = k + 1 end
  return k
end

local function holder_of(m)
  if #m == 16 then
    return (string.gsub(m, '.', function(c) return string.format('%02x', string.byte(c)) end))
  end
  return string.match(m, '^(.+)/%d+$') or m
end

-- Returns expired permits to the count (as Redisson's acquire does) and wakes waiters.
local function sem_purge(n, z, meta, now, channel)
  local dead = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  if #dead == 0 then return 0 end
  for _, m in ipairs(dead) do
    redis.call('ZREM', z, m)
    redis.call('HDEL', meta, 't:' .. holder_of(m))
  end
  if redis.call('EXISTS', n) == 1 then
    redis.call('PUBLISH', channel, redis.call('INCRBY', n, #dead))
  end
  return #dead
end
"#
    };
}

/// A lock's fencing token is its counter: a fresh grant `INCR`s it and nothing else moves it
/// while the lock is held (Redisson's `RFencedLock.getToken` reads it the same way), so a
/// re-entry or `inspect` reads the holder's token back from it. The one exception is a
/// Redlock node that granted late, whose counter may stand above the round's token:
/// `FENCE_RAISE` then records the token as `t:<holder>` in `meta`, which wins. The
/// uncontended grant (no hash, no queue, no record) runs first, in four calls, before the
/// prelude's functions are even defined; what only the other paths read is packed into one
/// argument (every argument and reply element costs the server time on every call).
///
/// KEYS: hash, queue, timeouts, counter, meta.
/// ARGV: holder, lease ms, `<fair 0/1><enqueue 0/1>:<queue ttl ms>:<clock>:<channel>`.
const LOCK_ACQUIRE: &str = concat!(
    r#"
local holder, lease = ARGV[1], tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[5]) == 0 then
  local t = redis.call('INCR', KEYS[4])
  redis.call('HSET', KEYS[1], holder, 1)
  redis.call('PEXPIRE', KEYS[1], lease)
  return t
end
"#,
    prelude!(),
    r#"
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
  local t = redis.call('INCR', KEYS[4])
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
"#
);

/// KEYS: hash, queue, timeouts, meta. ARGV: holder, count (0: all), channel, clock.
/// The common release (no queue, no record) returns before the prelude is defined.
const LOCK_RELEASE: &str = concat!(
    r#"
local holder = ARGV[1]
local c = redis.call('HGET', KEYS[1], holder)
if not c then return {0} end
c = tonumber(c)
local k = tonumber(ARGV[2])
if k == 0 then k = c end
if k > c then return {3, c} end
if k < c then
  redis.call('HSET', KEYS[1], holder, c - k)
  return {2, c - k}
end
redis.call('HDEL', KEYS[1], holder)
if redis.call('EXISTS', KEYS[2], KEYS[4]) == 0 then
  redis.call('PUBLISH', ARGV[3], 0)
  return 1
end
"#,
    prelude!(),
    r#"
redis.call('HDEL', KEYS[4], 't:' .. holder)
if redis.call('EXISTS', KEYS[2]) == 1 then
  purge_queue(KEYS[2], KEYS[3], now_ms(ARGV[4]))
  local h = redis.call('LINDEX', KEYS[2], 0)
  if h then redis.call('PUBLISH', ARGV[3] .. ':' .. h, 0) end
end
redis.call('PUBLISH', ARGV[3], 0)
return 1
"#
);

/// KEYS: hash, meta. ARGV: holder, lease ms.
const LOCK_RENEW: &str = concat!(
    prelude!(),
    r#"
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
stretch(KEYS[2], tonumber(ARGV[2]), false)
return 1
"#
);

/// KEYS: queue, timeouts, hash. ARGV: holder, channel.
const LOCK_LEAVE: &str = r#"
local head = redis.call('LINDEX', KEYS[1], 0)
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('LREM', KEYS[1], 0, ARGV[1]) == 0 then return 0 end
if head == ARGV[1] and redis.call('EXISTS', KEYS[3]) == 0 then
  local h = redis.call('LINDEX', KEYS[1], 0)
  if h then redis.call('PUBLISH', ARGV[2] .. ':' .. h, 0) end
end
return 1
"#;

/// KEYS: hash, queue, timeouts, counter, meta. ARGV: clock.
/// Reply: {now, pttl, hgetall hash, lrange queue, zrange timeouts withscores, counter, hgetall meta}.
const LOCK_INSPECT: &str = concat!(
    prelude!(),
    r#"
return {now_ms(ARGV[1]), redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[1]),
  redis.call('LRANGE', KEYS[2], 0, -1), redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES'),
  redis.call('GET', KEYS[4]), redis.call('HGETALL', KEYS[5])}
"#
);

/// KEYS: hash, queue, timeouts, counter, meta.
/// ARGV: holder, lease ms, 'r'/'w', the other side's holder (a reader: its writer; a
/// writer: its reader), enqueue, queue ttl ms, timeout key base, channel.
const RW_ACQUIRE: &str = concat!(
    prelude!(),
    rw_prelude!(),
    r#"
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
  local t = redis.call('INCR', KEYS[4])
  if not reading then
    redis.call('HSET', KEYS[1], 'mode', 'write')
  elseif not mode then
    redis.call('HSET', KEYS[1], 'mode', 'read')
  end
  redis.call('HSET', KEYS[1], holder, 1)
  redis.call('SET', base .. ':' .. holder .. ':rwlock_timeout:1', 1, 'PX', lease)
  if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
  redis.call('HSET', KEYS[5], 't:' .. holder, t)
  stretch(KEYS[5], lease, true)
  return {1, t, 1, 1}
end
if not reading and ARGV[5] == '1' then enqueue(KEYS[2], KEYS[3], holder, now, tonumber(ARGV[6])) end
if freed or qfreed > 0 then redis.call('PUBLISH', ARGV[8], 1) end
return {0, least, tonumber(redis.call('GET', KEYS[4])) or 0}
"#
);

/// KEYS: hash, meta. ARGV: holder, count (0: all), timeout key base, channel.
const RW_RELEASE: &str = concat!(
    rw_prelude!(),
    r#"
local holder, base = ARGV[1], ARGV[3]
if not redis.call('HGET', KEYS[1], 'mode') then return {0} end
rw_scan(KEYS[1], KEYS[2], base)
local c = redis.call('HGET', KEYS[1], holder)
if not c then return {0} end
c = tonumber(c)
local k = tonumber(ARGV[2])
if k == 0 then k = c end
if k > c then return {3, c} end
for i = c - k + 1, c do redis.call('DEL', base .. ':' .. holder .. ':rwlock_timeout:' .. i) end
if k < c then
  redis.call('HSET', KEYS[1], holder, c - k)
  return {2, c - k}
end
redis.call('HDEL', KEYS[1], holder)
redis.call('HDEL', KEYS[2], 't:' .. holder)
local _, _, most = rw_scan(KEYS[1], KEYS[2], base)
if most < 0 then
  -- Redisson: a write unlock publishes 1 (wake every waiter), a read unlock 0.
  if is_writer(holder) then redis.call('PUBLISH', ARGV[4], 1) else redis.call('PUBLISH', ARGV[4], 0) end
else
  if most < FOREVER then redis.call('PEXPIRE', KEYS[1], most) end
  -- A writer left its own readers behind (downgrade): other readers may enter now.
  if is_writer(holder) then redis.call('PUBLISH', ARGV[4], 1) end
end
return {1}
"#
);

/// KEYS: hash, meta. ARGV: holder, lease ms, timeout key base.
const RW_RENEW: &str = concat!(
    prelude!(),
    rw_prelude!(),
    r#"
local holder, lease, base = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local c = tonumber(redis.call('HGET', KEYS[1], holder))
if not c or hold_left(base, holder, c) == -2 then return 0 end
for i = 1, c do redis.call('SET', base .. ':' .. holder .. ':rwlock_timeout:' .. i, 1, 'PX', lease) end
if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
stretch(KEYS[2], lease, true)
return 1
"#
);

/// KEYS: queue, timeouts. ARGV: holder, channel.
const RW_LEAVE: &str = r#"
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('LREM', KEYS[1], 0, ARGV[1]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[2], 1)
return 1
"#;

/// KEYS: hash, queue, timeouts, counter, meta. ARGV: timeout key base.
/// Reply: {now, counter, {{field, count, left, token}…}, lrange queue, zrange timeouts withscores}.
const RW_INSPECT: &str = concat!(
    prelude!(),
    rw_prelude!(),
    r#"
local base = ARGV[1]
local holds = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local f = all[i]
  local count = tonumber(all[i + 1])
  if f ~= 'mode' and count then
    local t = redis.call('HGET', KEYS[5], 't:' .. f)
    local left = hold_left(base, f, count)
    if left == -2 and is_writer(f) and not t then left = redis.call('PTTL', KEYS[1]) end
    if left == -1 then left = FOREVER end
    if left > 0 then table.insert(holds, {f, count, left, tonumber(t) or 0}) end
  end
end
return {now_ms(), redis.call('GET', KEYS[4]), holds,
  redis.call('LRANGE', KEYS[2], 0, -1), redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')}
"#
);

/// KEYS: count, permits, counter, meta.
/// ARGV: holder, first member, count, limit, lease ms, channel, clock.
const SEM_ACQUIRE: &str = concat!(
    prelude!(),
    sem_prelude!(),
    r#"
local holder, m1, lease = ARGV[1], ARGV[2], tonumber(ARGV[5])
local now = now_ms(ARGV[7])
sem_purge(KEYS[1], KEYS[2], KEYS[4], now, ARGV[6])
if redis.call('EXISTS', KEYS[1]) == 0 then
  local v = tonumber(ARGV[4]) - redis.call('ZCARD', KEYS[2])
  if v < 0 then v = 0 end
  redis.call('SET', KEYS[1], v)
end
local avail = tonumber(redis.call('GET', KEYS[1])) or 0
local k = held(KEYS[2], holder, m1)
local want = tonumber(ARGV[3])
if k > 0 then want = 1 end
if avail >= want then
  redis.call('DECRBY', KEYS[1], want)
  local exp = now + lease
  if k > 0 then
    local old = tonumber(redis.call('ZSCORE', KEYS[2], m1))
    if old > exp then exp = old end
    for i = 1, k + 1 do redis.call('ZADD', KEYS[2], exp, member(holder, m1, i)) end
    stretch(KEYS[4], lease, true)
    local t = redis.call('HGET', KEYS[4], 't:' .. holder) or redis.call('GET', KEYS[3]) or 0
    return {1, tonumber(t), k + 1, 0}
  end
  for i = 1, want do redis.call('ZADD', KEYS[2], exp, member(holder, m1, i)) end
  local t = redis.call('INCR', KEYS[3])
  redis.call('HSET', KEYS[4], 't:' .. holder, t)
  stretch(KEYS[4], lease, true)
  return {1, t, want, 1}
end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local retry = -1
if first[2] then
  retry = tonumber(first[2]) - now
  if retry < 1 then retry = 1 end
end
return {0, retry, tonumber(redis.call('GET', KEYS[3])) or 0}
"#
);

/// KEYS: count, permits, meta. ARGV: holder, first member, count (0: all), channel, clock.
const SEM_RELEASE: &str = concat!(
    prelude!(),
    sem_prelude!(),
    r#"
local holder, m1 = ARGV[1], ARGV[2]
sem_purge(KEYS[1], KEYS[2], KEYS[3], now_ms(ARGV[5]), ARGV[4])
local k = held(KEYS[2], holder, m1)
if k == 0 then return {0} end
local n = tonumber(ARGV[3])
if n == 0 then n = k end
if n > k then return {3, k} end
for i = k - n + 1, k do redis.call('ZREM', KEYS[2], member(holder, m1, i)) end
local v = n
if redis.call('EXISTS', KEYS[1]) == 1 then v = redis.call('INCRBY', KEYS[1], n) end
redis.call('PUBLISH', ARGV[4], v)
if n == k then
  redis.call('HDEL', KEYS[3], 't:' .. holder)
  return {1}
end
return {2, k - n}
"#
);

/// KEYS: count, permits, meta. ARGV: holder, first member, lease ms, channel, clock.
const SEM_RENEW: &str = concat!(
    prelude!(),
    sem_prelude!(),
    r#"
local holder, m1, lease = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms(ARGV[5])
sem_purge(KEYS[1], KEYS[2], KEYS[3], now, ARGV[4])
local k = held(KEYS[2], holder, m1)
if k == 0 then return 0 end
for i = 1, k do redis.call('ZADD', KEYS[2], 'XX', now + lease, member(holder, m1, i)) end
stretch(KEYS[3], lease, true)
return 1
"#
);

/// KEYS: permits, counter, meta. ARGV: clock. Reply: {now, zrange permits withscores, counter, hgetall meta}.
const SEM_INSPECT: &str = concat!(
    prelude!(),
    r#"
return {now_ms(ARGV[1]), redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'), redis.call('GET', KEYS[2]),
  redis.call('HGETALL', KEYS[3])}
"#
);

/// KEYS: count. ARGV: new count, channel. `RCountDownLatch.trySetCount` (a count of zero
/// or below, which Redisson never leaves, counts as open).
const LATCH_SET: &str = r#"
local v = tonumber(redis.call('GET', KEYS[1]))
if v and v > 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[2], 1)
return 1
"#;

/// KEYS: count. ARGV: channel. `RCountDownLatch.countDown`, never below zero.
const LATCH_DOWN: &str = r#"
local v = tonumber(redis.call('GET', KEYS[1]))
if not v then return 0 end
if v <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
v = redis.call('DECR', KEYS[1])
if v <= 0 then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[1], 0)
  return 0
end
return v
"#;

/// `redlock://`'s write-back of a grant's token to one node: the name's token counter is
/// a max-register (raised to `token`, never lowered), and the holder's recorded token
/// becomes the quorum's. A `Lock` keeps no record (its holder's token is the counter)
/// until its node's counter stands above the token (a late grant): then the record is
/// written, with the hold's ttl.
///
/// KEYS: counter, meta, and for a `Lock` its hash. ARGV: token, the holder's meta field
/// (`t:<holder>`), and for a `Lock` the holder.
const FENCE_RAISE: &str = r#"
local t = tonumber(ARGV[1])
local c = tonumber(redis.call('GET', KEYS[1])) or 0
if c < t then redis.call('SET', KEYS[1], t) end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[2], t)
elseif c > t and KEYS[3] and redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[2], t)
  local p = redis.call('PTTL', KEYS[3])
  if p > 0 then redis.call('PEXPIRE', KEYS[2], p) end
end
return 1
"#;

/// The simple lock (`?scheme=simple`): the key is a plain string holding the holder's
/// token, set with `PX` (redis-py's `Lock`, redsync, node-redlock); baton's hold count and
/// fencing token live in the side hash `meta` (`c:<holder>`, `t:<holder>`), which those
/// clients never read, and whose ttl follows the key's.
///
/// KEYS: key, counter, meta. ARGV: holder, lease ms.
const SIMPLE_ACQUIRE: &str = r#"
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
local t = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], holder, 'PX', lease)
redis.call('HSET', KEYS[3], 't:' .. holder, t, 'c:' .. holder, 1)
redis.call('PEXPIRE', KEYS[3], lease)
return t
"#;

/// KEYS: key, meta. ARGV: holder, count (0: all), channel. redis-py's compare-and-delete,
/// counting re-entries down first.
const SIMPLE_RELEASE: &str = r#"
local holder = ARGV[1]
if redis.call('GET', KEYS[1]) ~= holder then return {0} end
local c = tonumber(redis.call('HGET', KEYS[2], 'c:' .. holder)) or 1
local k = tonumber(ARGV[2])
if k == 0 then k = c end
if k > c then return {3, c} end
if k < c then
  redis.call('HSET', KEYS[2], 'c:' .. holder, c - k)
  return {2, c - k}
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[3], 0)
return 1
"#;

/// KEYS: key, meta. ARGV: holder, lease ms. Compare-and-extend (redis-py's `reacquire`).
const SIMPLE_RENEW: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
return 1
"#;

/// KEYS: key, counter, meta. Reply: {now, value, pttl, hgetall meta, counter}.
const SIMPLE_INSPECT: &str = concat!(
    prelude!(),
    r#"
return {now_ms(), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[3]),
  redis.call('GET', KEYS[2])}
"#
);

/// `?semaphore=rsemaphore`: a semaphore as Redisson's `RSemaphore` keeps it — the bare
/// counter `N`, nothing else in Redisson's view. baton records each holder's permits and
/// token in its side hash (`p:<holder>`, `t:<holder>`; no ttl: a permit has no lease).
///
/// KEYS: count, counter, meta. ARGV: holder, count, limit.
const RSEM_ACQUIRE: &str = r#"
local holder = ARGV[1]
local want = tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[3]) end
local k = tonumber(redis.call('HGET', KEYS[3], 'p:' .. holder)) or 0
if k > 0 then want = 1 end
if (tonumber(redis.call('GET', KEYS[1])) or 0) < want then return {0, -1} end
redis.call('DECRBY', KEYS[1], want)
redis.call('HINCRBY', KEYS[3], 'p:' .. holder, want)
if k > 0 then
  local t = redis.call('HGET', KEYS[3], 't:' .. holder) or redis.call('GET', KEYS[2]) or 0
  return {1, tonumber(t), k + want, 0}
end
local t = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[3], 't:' .. holder, t)
return {1, t, want, 1}
"#;

/// KEYS: count, meta. ARGV: holder, count (0: all), channel. `RSemaphore.release`: INCRBY
/// and the new count published on `redisson_sc:{N}`.
const RSEM_RELEASE: &str = r#"
local holder = ARGV[1]
local k = tonumber(redis.call('HGET', KEYS[2], 'p:' .. holder)) or 0
if k == 0 then return {0} end
local n = tonumber(ARGV[2])
if n == 0 then n = k end
if n > k then return {3, k} end
redis.call('PUBLISH', ARGV[3], redis.call('INCRBY', KEYS[1], n))
if n == k then
  redis.call('HDEL', KEYS[2], 'p:' .. holder, 't:' .. holder)
  return {1}
end
redis.call('HSET', KEYS[2], 'p:' .. holder, k - n)
return {2, k - n}
"#;

/// KEYS: meta. ARGV: holder. Nothing to extend: held while recorded.
const RSEM_RENEW: &str = r#"
return redis.call('HEXISTS', KEYS[1], 'p:' .. ARGV[1])
"#;

/// KEYS: counter, meta. Reply: {now, hgetall meta, counter}.
const RSEM_INSPECT: &str = concat!(
    prelude!(),
    r#"
return {now_ms(), redis.call('HGETALL', KEYS[2]), redis.call('GET', KEYS[1])}
"#
);

/// One script: its source (for `SCRIPT LOAD`) and its SHA (for `EVALSHA`).
pub(super) struct Lua {
    pub(super) code: &'static str,
    pub(super) script: Script,
}

impl Lua {
    fn new(code: &'static str) -> Lua {
        Lua { code, script: Script::new(code) }
    }
}

/// Every script, loaded once.
pub(super) struct Scripts {
    pub(super) lock_acquire: Lua,
    pub(super) lock_release: Lua,
    pub(super) lock_renew: Lua,
    pub(super) lock_leave: Lua,
    pub(super) lock_inspect: Lua,
    pub(super) rw_acquire: Lua,
    pub(super) rw_release: Lua,
    pub(super) rw_renew: Lua,
    pub(super) rw_leave: Lua,
    pub(super) rw_inspect: Lua,
    pub(super) sem_acquire: Lua,
    pub(super) sem_release: Lua,
    pub(super) sem_renew: Lua,
    pub(super) sem_inspect: Lua,
    pub(super) latch_set: Lua,
    pub(super) latch_down: Lua,
    pub(super) simple_acquire: Lua,
    pub(super) simple_release: Lua,
    pub(super) simple_renew: Lua,
    pub(super) simple_inspect: Lua,
    pub(super) rsem_acquire: Lua,
    pub(super) rsem_release: Lua,
    pub(super) rsem_renew: Lua,
    pub(super) rsem_inspect: Lua,
    pub(super) fence_raise: Lua,
}

impl Scripts {
    pub(super) fn all(&self) -> [&Lua; 25] {
        [
            &self.lock_acquire,
            &self.lock_release,
            &self.lock_renew,
            &self.lock_leave,
            &self.lock_inspect,
            &self.rw_acquire,
            &self.rw_release,
            &self.rw_renew,
            &self.rw_leave,
            &self.rw_inspect,
            &self.sem_acquire,
            &self.sem_release,
            &self.sem_renew,
            &self.sem_inspect,
            &self.latch_set,
            &self.latch_down,
            &self.simple_acquire,
            &self.simple_release,
            &self.simple_renew,
            &self.simple_inspect,
            &self.rsem_acquire,
            &self.rsem_release,
            &self.rsem_renew,
            &self.rsem_inspect,
            &self.fence_raise,
        ]
    }
}

pub(super) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    lock_acquire: Lua::new(LOCK_ACQUIRE),
    lock_release: Lua::new(LOCK_RELEASE),
    lock_renew: Lua::new(LOCK_RENEW),
    lock_leave: Lua::new(LOCK_LEAVE),
    lock_inspect: Lua::new(LOCK_INSPECT),
    rw_acquire: Lua::new(RW_ACQUIRE),
    rw_release: Lua::new(RW_RELEASE),
    rw_renew: Lua::new(RW_RENEW),
    rw_leave: Lua::new(RW_LEAVE),
    rw_inspect: Lua::new(RW_INSPECT),
    sem_acquire: Lua::new(SEM_ACQUIRE),
    sem_release: Lua::new(SEM_RELEASE),
    sem_renew: Lua::new(SEM_RENEW),
    sem_inspect: Lua::new(SEM_INSPECT),
    latch_set: Lua::new(LATCH_SET),
    latch_down: Lua::new(LATCH_DOWN),
    simple_acquire: Lua::new(SIMPLE_ACQUIRE),
    simple_release: Lua::new(SIMPLE_RELEASE),
    simple_renew: Lua::new(SIMPLE_RENEW),
    simple_inspect: Lua::new(SIMPLE_INSPECT),
    rsem_acquire: Lua::new(RSEM_ACQUIRE),
    rsem_release: Lua::new(RSEM_RELEASE),
    rsem_renew: Lua::new(RSEM_RENEW),
    rsem_inspect: Lua::new(RSEM_INSPECT),
    fence_raise: Lua::new(FENCE_RAISE),
});
