//! The simple safe lock on `redis://…?scheme=simple` (the server of `scripts/services`,
//! `BATON_TEST_REDIS_URL`): the behaviour suite's checks that apply to it, and interop
//! with the `SET name token NX PX` layout of redis-py's `Lock` (also redsync's and
//! node-redlock's), with the plain `redis` crate playing redis-py's part.
//!
//! What the simple scheme changes is the `Lock` layout only: a fair lock is `Unsupported`
//! there (no queue in that layout; `fair_lock_is_unsupported` below), and read-write
//! locks, semaphores, permits and latches keep Redisson's layouts, so their checks run
//! here too. Left out of the selection, because they take a fair lock on purpose:
//! `fair::*`, `lock::fencing_tokens_grow` (its last grant is a fair lock's; the same
//! sequence with a plain lock last is `fencing_tokens_grow_simple` below) and
//! `lock::close_releases_every_primitive` (likewise: `close_releases_simple`).
#![cfg(feature = "redis")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};
use behaviour::{Store, bounded, unique, with_option};
use redis::aio::MultiplexedConnection;
use tokio::time::Instant;

fn server() -> String {
    behaviour::env_server("BATON_TEST_REDIS_URL", "simple-lock Redis")
}

/// `redis://…?scheme=simple`; every check names its keys with `unique()`.
fn store() -> Store {
    Store::from_env("BATON_TEST_REDIS_URL", "simple-lock Redis", "scheme=simple")
}

// A fair lock is `Unsupported` on the simple scheme: every check that takes one is left out.
behaviour_suite!(crate::simple::store; except fair, election);
cross_process_suite!(crate::simple::store);

/// A baton client on the simple scheme under a fresh key prefix, and the prefix.
async fn baton() -> (Client, String) {
    let prefix = format!("simple:{}:", uuid::Uuid::new_v4().simple());
    let c = Client::connect(&with_option(&store().url, &format!("prefix={prefix}"))).await.unwrap();
    (c, prefix)
}

async fn raw() -> MultiplexedConnection {
    let base = server().split('?').next().unwrap().to_owned();
    redis::Client::open(base).unwrap().get_multiplexed_async_connection().await.unwrap()
}

async fn eval<T: redis::FromRedisValue>(
    con: &mut MultiplexedConnection,
    script: &str,
    keys: &[&str],
    args: &[&str],
) -> T {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(keys.len()).arg(keys).arg(args);
    cmd.query_async(con).await.unwrap()
}

/// redis-py's token: `uuid1().hex`, 32 hex digits.
fn redis_py_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// redis-py `Lock.do_acquire`: `SET name token NX PX timeout_ms` (no `PX` without a
/// timeout); true when acquired.
async fn redis_py_acquire(con: &mut MultiplexedConnection, key: &str, token: &str, px: Option<u64>) -> bool {
    let mut cmd = redis::cmd("SET");
    cmd.arg(key).arg(token).arg("NX");
    if let Some(px) = px {
        cmd.arg("PX").arg(px);
    }
    let r: Option<String> = cmd.query_async(con).await.unwrap();
    r.is_some()
}

/// redis-py `Lock.LUA_RELEASE_SCRIPT` (compare-and-delete); 1 when released.
const REDIS_PY_RELEASE: &str = "
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
return 1";

/// redis-py `Lock.LUA_EXTEND_SCRIPT`: ARGV = [token, additional ms, replace ('1'/'0')].
const REDIS_PY_EXTEND: &str = "
local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
local expiration = redis.call('pttl', KEYS[1])
if not expiration then
    expiration = 0
end
if expiration < 0 then
    return 0
end
local newttl = ARGV[2]
if ARGV[3] == '0' then
    newttl = ARGV[2] + expiration
end
redis.call('pexpire', KEYS[1], newttl)
return 1";

/// redsync's `deleteScript`: DEL's answer when the value matches, -1 when the key is gone.
const REDSYNC_DELETE: &str = "
local val = redis.call('GET', KEYS[1])
if val == ARGV[1] then
    return redis.call('DEL', KEYS[1])
elseif val == false then
    return -1
else
    return 0
end";

/// The engine re-checks a waiter at least every second (+ jitter); the simple clients
/// publish nothing on release, so a foreign release is seen by that re-check. 3 s leaves
/// room for a loaded 2-core machine; a waiter that never re-checked would hang to the
/// bound of the `bounded` around it.
const FOREIGN_WAKE: Duration = Duration::from_secs(3);

/// A hold written the way redis-py writes it makes baton wait; the release done the
/// redis-py way (its compare-and-delete) lets baton in, with a fresh token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_hold_blocks_and_its_release_lets_baton_in() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton().await;
    let name = unique("py");
    let key = format!("{prefix}{name}");
    let mut con = raw().await;
    let token = redis_py_token();
    assert!(redis_py_acquire(&mut con, &key, &token, Some(30_000)).await);
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "redis-py holds it");
    let info = c.inspect(&name).await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].owner, token, "the redis-py token reads back as the holder");
    let waiter = {
        let c = c.clone();
        let name = name.clone();
        tokio::spawn(async move { c.lock(&name).acquire().await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "baton must wait for the redis-py hold");
    // Another redis-py token cannot release it; the holder's can.
    let wrong: i64 = eval(&mut con, REDIS_PY_RELEASE, &[&key], &[&redis_py_token()]).await;
    assert_eq!(wrong, 0);
    let released = Instant::now();
    let ok: i64 = eval(&mut con, REDIS_PY_RELEASE, &[&key], &[&token]).await;
    assert_eq!(ok, 1);
    let g = bounded("baton after the redis-py release", Duration::from_secs(10), waiter).await.unwrap().unwrap();
    assert!(released.elapsed() < FOREIGN_WAKE, "took {:?}", released.elapsed());
    assert!(g.token().get() >= 1);
    let value: String = redis::cmd("GET").arg(&key).query_async(&mut con).await.unwrap();
    assert_eq!(value, g.owner());
    g.release().await.unwrap();
}

/// A redis-py hold without a timeout (`SET NX`, no ttl) blocks until released; one that
/// expires (`PX`) lets baton in after its ttl.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_holds_with_and_without_ttl() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton().await;
    let mut con = raw().await;
    let name = unique("py-nottl");
    let key = format!("{prefix}{name}");
    let token = redis_py_token();
    assert!(redis_py_acquire(&mut con, &key, &token, None).await);
    let e = c.lock(&name).acquire_timeout(Duration::from_millis(400)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    let ok: i64 = eval(&mut con, REDIS_PY_RELEASE, &[&key], &[&token]).await;
    assert_eq!(ok, 1);
    c.lock(&name).try_acquire().await.unwrap().expect("free after the release").release().await.unwrap();

    let name = unique("py-ttl");
    let key = format!("{prefix}{name}");
    assert!(redis_py_acquire(&mut con, &key, &redis_py_token(), Some(500)).await);
    let t0 = Instant::now();
    let g = bounded("baton after the redis-py ttl", Duration::from_secs(10), c.lock(&name).acquire()).await.unwrap();
    // 500 ms ttl; the waiter's re-check is timed by the PTTL baton read (+ up to 1 s re-check
    // slack on a loaded machine).
    assert!(t0.elapsed() >= Duration::from_millis(400), "granted before the ttl: {:?}", t0.elapsed());
    assert!(t0.elapsed() < Duration::from_millis(500) + FOREIGN_WAKE, "took {:?}", t0.elapsed());
    g.release().await.unwrap();
}

/// A baton hold reads back as redis-py's layout: a plain string key holding the owner's
/// token, with a PTTL; redis-py's `SET NX` fails on it, and neither redis-py's release
/// nor redsync's (with their own tokens) frees it. baton's extras (count, token) sit in
/// keys those clients never read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_hold_reads_back_as_redis_py_layout() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton().await;
    let mut con = raw().await;
    let name = unique("layout");
    let key = format!("{prefix}{name}");
    let lock = c.lock_with(&name, LockOptions::new().ttl(Duration::from_secs(20)));
    let g = lock.acquire().await.unwrap();
    let again = lock.acquire().await.unwrap();
    let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut con).await.unwrap();
    assert_eq!(kind, "string");
    let value: String = redis::cmd("GET").arg(&key).query_async(&mut con).await.unwrap();
    assert_eq!(value, g.owner());
    let pttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut con).await.unwrap();
    assert!(pttl > 15_000 && pttl <= 20_000, "PTTL {pttl}");
    // The side keys: hold count and token in `{N}:baton`, the counter in
    // `redisson_lock_token:{N}`.
    let meta = format!("{{{key}}}:baton");
    let count: u32 = redis::cmd("HGET").arg(&meta).arg(format!("c:{value}")).query_async(&mut con).await.unwrap();
    assert_eq!(count, 2);
    let token: u64 = redis::cmd("HGET").arg(&meta).arg(format!("t:{value}")).query_async(&mut con).await.unwrap();
    assert_eq!(token, g.token().get());
    let counter: u64 =
        redis::cmd("GET").arg(format!("redisson_lock_token:{{{key}}}")).query_async(&mut con).await.unwrap();
    assert_eq!(counter, g.token().get());
    let meta_ttl: i64 = redis::cmd("PTTL").arg(&meta).query_async(&mut con).await.unwrap();
    assert!(meta_ttl > 0 && meta_ttl <= 20_000, "the side hash lives with the key: {meta_ttl}");
    // redis-py and redsync cannot take or free it.
    let other = redis_py_token();
    assert!(!redis_py_acquire(&mut con, &key, &other, Some(10_000)).await);
    let r: i64 = eval(&mut con, REDIS_PY_RELEASE, &[&key], &[&other]).await;
    assert_eq!(r, 0);
    let r: i64 = eval(&mut con, REDSYNC_DELETE, &[&key], &[&other]).await;
    assert_eq!(r, 0);
    let r: i64 = eval(&mut con, REDIS_PY_EXTEND, &[&key], &[&other, "1000", "1"]).await;
    assert_eq!(r, 0);
    again.release().await.unwrap();
    let still: Option<String> = redis::cmd("GET").arg(&key).query_async(&mut con).await.unwrap();
    assert_eq!(still.as_deref(), Some(value.as_str()), "one re-entry left");
    g.release().await.unwrap();
    let gone: (i64, i64) =
        redis::pipe().cmd("EXISTS").arg(&key).cmd("EXISTS").arg(&meta).query_async(&mut con).await.unwrap();
    assert_eq!(gone, (0, 0), "a full release deletes the key and the side hash");
    // Free: redis-py takes it, extends it the redis-py way, and baton waits.
    assert!(redis_py_acquire(&mut con, &key, &other, Some(10_000)).await);
    let r: i64 = eval(&mut con, REDIS_PY_EXTEND, &[&key], &[&other, "5000", "0"]).await;
    assert_eq!(r, 1);
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    let r: i64 = eval(&mut con, REDSYNC_DELETE, &[&key], &[&other]).await;
    assert_eq!(r, 1);
    let g = c.lock(&name).try_acquire().await.unwrap().expect("free after redsync's delete");
    assert!(g.token().get() > token, "a fresh grant gets a higher token");
    g.release().await.unwrap();
}

/// baton's watchdog keeps a simple hold alive past its lease with compare-and-extend,
/// and a redis-py client sees it held all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_extends_simple_hold() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton().await;
    let mut con = raw().await;
    let name = unique("watchdog");
    let key = format!("{prefix}{name}");
    let opts = LockOptions::new().lease(Duration::from_millis(900)).renew_every(Duration::from_millis(300));
    let g = c.lock_with(&name, opts).acquire().await.unwrap();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(!redis_py_acquire(&mut con, &key, &redis_py_token(), Some(1000)).await, "renewed hold was taken");
    }
    assert!(!g.is_lost());
    g.release().await.unwrap();
}

/// Fencing tokens grow across every kind of simple grant (the suite's
/// `fencing_tokens_grow` with a plain lock's grant last), including after a redis-py hold
/// in between.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_grow_simple() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let redis_py_hold = async |name: &str| {
        let mut con = raw().await;
        let token = redis_py_token();
        // The expired grant's key may outlive its holder's lost signal (which fires a drift
        // margin early): retry as redis-py's blocking acquire would, bounded.
        let t0 = Instant::now();
        while !redis_py_acquire(&mut con, name, &token, Some(10_000)).await {
            assert!(t0.elapsed() < Duration::from_secs(5), "redis-py could not take the expired lock");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _: i64 = eval(&mut con, REDIS_PY_RELEASE, &[name], &[&token]).await;
    };
    behaviour::lock::fencing_tokens_grow_with(&store(), redis_py_hold, false).await;
}

/// `close` gives back simple holds (re-entered too) and the Redisson-layout kinds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_releases_simple() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let store = store();
    let (a, b) = (store.client().await, store.client().await);
    let n = unique("close");
    let l = a.lock(&n);
    let guards = vec![l.acquire().await.unwrap(), l.acquire().await.unwrap(), a.rw_lock(&n).write().await.unwrap()];
    let permit = a.semaphore(&n, 1).acquire().await.unwrap();
    bounded("close", Duration::from_secs(10), a.close()).await;
    assert!(b.lock(&n).try_acquire().await.unwrap().is_some(), "re-entered simple lock still held");
    assert!(b.rw_lock(&n).try_read().await.unwrap().is_some(), "write hold still held");
    assert!(b.semaphore(&n, 1).try_acquire().await.unwrap().is_some(), "permit still held");
    for g in guards {
        assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::Closed);
    }
    assert_eq!(permit.release().await.unwrap_err().kind(), ErrorKind::Closed);
}

/// A fair lock has no simple layout: a typed `Unsupported` from every way of taking it,
/// which names the option; a bad `scheme` is `InvalidArgument`.
#[tokio::test]
async fn fair_lock_is_unsupported() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, _) = baton().await;
    let name = unique("fair");
    let fair = c.fair_lock(&name);
    for r in [fair.try_acquire().await.map(|_| ()), fair.acquire().await.map(|_| ())] {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.to_string().contains("scheme=simple"), "{e}");
    }
    let e = fair.acquire_timeout(Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    // Nothing was taken: a plain lock of the name is free.
    c.lock(&name).try_acquire().await.unwrap().expect("free").release().await.unwrap();
    let e = Client::connect(&with_option(&server(), "scheme=weird")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("weird"), "{e}");
}
