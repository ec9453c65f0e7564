//! Wire compatibility with Redisson, with the plain `redis` crate playing Redisson's part:
//! holds written exactly as Redisson writes them make baton wait, releases done the way
//! Redisson does them (its unlock scripts and messages) wake baton at once, and baton's
//! holds read back in Redisson's layout. The scripts below follow Redisson's
//! (RedissonLock, RedissonFairLock, RedissonReadLock, RedissonPermitExpirableSemaphore,
//! RedissonCountDownLatch): same keys, fields, arguments and messages.
//! With `?clock=client` (Redisson's client-clock scores) the behaviour suite's fair-lock,
//! semaphore and permit checks run too: the option changes whose clock decides, not what
//! is guaranteed on one machine.
//! The server is `BATON_TEST_REDIS_URL` (see `redis.rs` for the unset case).
#![cfg(feature = "redis")]

use baton_testkit::{behaviour, behaviour_suite};
use std::time::Duration;

use baton::{Client, LockOptions};
use behaviour::{Store, WAKE};
use redis::aio::MultiplexedConnection;
use tokio::time::Instant;

fn server() -> String {
    behaviour::env_server("BATON_TEST_REDIS_URL", "Redis interop")
}

/// `redis://…?clock=client`; every check names its keys with `unique()`.
fn client_clock_store() -> Store {
    Store::from_env("BATON_TEST_REDIS_URL", "Redis interop", "clock=client")
}

behaviour_suite!(@tests crate::interop::client_clock_store;
    fair::grants_in_request_order, fair::vanished_waiter_is_skipped, fair::dropped_waiter_leaves_queue,
    fair::random_cancellation_leaves_no_queue_place, fair::fair_exclusion,
    semaphore::never_more_than_permits, semaphore::crashed_permits_return,
    semaphore::waiter_woken_and_dropped_permit_returns,
    permits::ids_and_release_by_id, permits::lease_expiry_and_update, permits::crashed_watchdog_permit_returns,
    permits::permit_lost_when_released_elsewhere,
);

/// A baton client under a fresh key prefix (`extra`: more URL options), and the prefix.
async fn baton(extra: &str) -> (Client, String) {
    let prefix = format!("interop:{}:", uuid::Uuid::new_v4().simple());
    let url = server();
    let sep = if url.contains('?') { '&' } else { '?' };
    let c = Client::connect(&format!("{url}{sep}prefix={prefix}{extra}")).await.unwrap();
    (c, prefix)
}

async fn raw() -> MultiplexedConnection {
    let base = server().split('?').next().unwrap().to_owned();
    redis::Client::open(base).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// A Redisson client id and thread: the hash field `uuid:threadId`.
fn redisson_field() -> String {
    format!("{}:{}", uuid::Uuid::new_v4(), 77)
}

async fn eval(con: &mut MultiplexedConnection, script: &str, keys: &[&str], args: &[&str]) -> redis::Value {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(keys.len()).arg(keys).arg(args);
    cmd.query_async(con).await.unwrap()
}

/// `RedissonLock.tryLockInnerAsync`: KEYS = [N], ARGV = [leaseMs, field]; nil when
/// acquired, else the holder's PTTL.
const RLOCK_ACQUIRE: &str = "
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])";

/// `RedissonLock.unlockInnerAsync`: KEYS = [N, channel, unlock latch],
/// ARGV = [0, leaseMs, field, publish command, latch ttl].
const RLOCK_RELEASE: &str = "
local v = redis.call('get', KEYS[3])
if v ~= false then return tonumber(v) end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local c = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if c > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1";

/// `RedissonFairLock.unlockInnerAsync` once the hold is gone: publishes `0` on the head
/// waiter's own channel. KEYS = [N, queue, timeouts, channel], ARGV = [0, field].
const RFAIR_RELEASE: &str = "
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
redis.call('del', KEYS[1])
local next = redis.call('lindex', KEYS[2], 0)
if next ~= false then redis.call('publish', KEYS[4] .. ':' .. next, ARGV[1]) end
return 1";

/// `RedissonCountDownLatch.trySetCount`: KEYS = [N, channel], ARGV = [1, count].
const LATCH_SET: &str = "
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[2])
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
return 0";

/// `RedissonCountDownLatch.countDown`: KEYS = [N, channel], ARGV = [0].
const LATCH_DOWN: &str = "
local v = redis.call('decr', KEYS[1])
if v <= 0 then redis.call('del', KEYS[1]) end
if v == 0 then redis.call('publish', KEYS[2], ARGV[1]) end";

/// A hold written as Redisson writes it (HINCRBY field 1 + PEXPIRE, re-entered once)
/// makes baton wait; Redisson's unlock — its script, publishing `0` on
/// `redisson_lock__channel:{N}` — wakes the baton waiter at once, and only after the last
/// of the two unlocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_hold_blocks_baton_and_its_unlock_wakes_it() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton("").await;
    let name = "orders/42";
    let n = format!("{prefix}{name}");
    let channel = format!("redisson_lock__channel:{{{n}}}");
    let field = redisson_field();
    let mut con = raw().await;
    for _ in 0..2 {
        assert_eq!(eval(&mut con, RLOCK_ACQUIRE, &[&n], &["30000", &field]).await, redis::Value::Nil);
    }
    assert!(c.lock(name).try_acquire().await.unwrap().is_none(), "baton ignored Redisson's hold");
    let info = c.inspect(name).await.unwrap();
    assert_eq!((info.holders[0].owner.as_str(), info.holders[0].count), (field.as_str(), 2));
    assert!(info.holders[0].lease_left.is_some_and(|l| l <= Duration::from_secs(30)));
    let waiter = tokio::spawn({
        let c = c.clone();
        async move { c.lock(name).acquire().await.map(|g| (g, Instant::now())) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished());
    let unlock = |id: &str| format!("redisson_unlock_latch:{{{n}}}:{id}");
    let latch1 = unlock("a");
    let r = eval(&mut con, RLOCK_RELEASE, &[&n, &channel, &latch1], &["0", "30000", &field, "publish", "5000"]).await;
    assert_eq!(r, redis::Value::Int(0), "re-entered once: still held");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "baton got in while Redisson still held");
    let latch2 = unlock("b");
    let released = Instant::now();
    let r = eval(&mut con, RLOCK_RELEASE, &[&n, &channel, &latch2], &["0", "30000", &field, "publish", "5000"]).await;
    assert_eq!(r, redis::Value::Int(1));
    let (g, at) = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    let latency = at.duration_since(released);
    eprintln!("woken {latency:?} after the Redisson-side release");
    assert!(latency < WAKE, "baton noticed Redisson's unlock after {latency:?}");
    // Now Redisson waits on baton.
    let busy = eval(&mut con, RLOCK_ACQUIRE, &[&n], &["30000", &field]).await;
    assert!(matches!(busy, redis::Value::Int(ms) if ms > 0 && ms <= 30_000), "{busy:?}");
    g.release().await.unwrap();
    let _: () = redis::cmd("DEL").arg(&latch1).arg(&latch2).query_async(&mut con).await.unwrap();
}

/// A baton hold reads back in Redisson's layout: the hash field `uuid:n` = hold count,
/// a PTTL, the fencing counter `redisson_lock_token:{N}` = the grant's token; a full
/// release publishes `0` on `redisson_lock__channel:{N}` (what Redisson's waiters wait
/// for). baton adds no key of its own: the holder's token is the counter, as Redisson's
/// `RFencedLock.getToken` reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_hold_reads_back_as_redisson() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton("").await;
    let name = "jobs/7";
    let n = format!("{prefix}{name}");
    let mut con = raw().await;
    // A Redisson waiter's view: a subscriber on the lock's channel (a blocking
    // connection on its own thread).
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let listener = std::thread::spawn({
        let (url, channel) =
            (server().split('?').next().unwrap().to_owned(), format!("redisson_lock__channel:{{{n}}}"));
        move || {
            let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
            let mut sub = con.as_pubsub();
            sub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            sub.subscribe(&channel).unwrap();
            ready_tx.send(()).unwrap();
            sub.get_message().map(|m| m.get_payload::<String>().unwrap())
        }
    });
    ready_rx.recv().unwrap();
    let lock = c.lock(name);
    let owner = lock.owner().unwrap().to_owned();
    let g = lock.acquire().await.unwrap();
    let count: String = redis::cmd("HGET").arg(&n).arg(&owner).query_async(&mut con).await.unwrap();
    assert_eq!(count, "1");
    let pttl: i64 = redis::cmd("PTTL").arg(&n).query_async(&mut con).await.unwrap();
    assert!(pttl > 0 && pttl <= 30_000, "{pttl}");
    let fields: Vec<String> = redis::cmd("HKEYS").arg(&n).query_async(&mut con).await.unwrap();
    assert_eq!(fields, vec![owner.clone()], "the hash holds the holder only, as Redisson's");
    let token: u64 = redis::cmd("GET").arg(format!("redisson_lock_token:{{{n}}}")).query_async(&mut con).await.unwrap();
    assert_eq!(token, g.token().get());
    let side: i64 = redis::cmd("EXISTS").arg(format!("{{{n}}}:baton")).query_async(&mut con).await.unwrap();
    assert_eq!(side, 0, "a lock keeps no per-holder record");
    let again = lock.acquire().await.unwrap();
    let count: String = redis::cmd("HGET").arg(&n).arg(&owner).query_async(&mut con).await.unwrap();
    assert_eq!(count, "2", "re-entry is HINCRBY, as Redisson's");
    assert_eq!(again.token(), g.token(), "re-entry keeps the token (baton's contract)");
    // Redisson's lock script sees a holder and answers with its PTTL.
    let busy = eval(&mut con, RLOCK_ACQUIRE, &[&n], &["30000", &redisson_field()]).await;
    assert!(matches!(busy, redis::Value::Int(ms) if ms > 0), "{busy:?}");
    again.release().await.unwrap();
    g.release().await.unwrap();
    let exists: i64 = redis::cmd("EXISTS").arg(&n).query_async(&mut con).await.unwrap();
    assert_eq!(exists, 0);
    let msg = tokio::task::spawn_blocking(move || listener.join().unwrap()).await.unwrap();
    assert_eq!(msg.expect("no unlock message within 10 s"), "0");
}

/// A baton fair-lock waiter queues in `redisson_lock_queue:{N}` (with a place in
/// `redisson_lock_timeout:{N}`) and is woken by Redisson's fair unlock, which publishes
/// only on the head waiter's channel `redisson_lock__channel:{N}:<holder>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_fair_unlock_wakes_the_baton_head_waiter() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton("").await;
    let name = "fair/1";
    let n = format!("{prefix}{name}");
    let (queue, timeouts, channel) = (
        format!("redisson_lock_queue:{{{n}}}"),
        format!("redisson_lock_timeout:{{{n}}}"),
        format!("redisson_lock__channel:{{{n}}}"),
    );
    let field = redisson_field();
    let mut con = raw().await;
    assert_eq!(eval(&mut con, RLOCK_ACQUIRE, &[&n], &["30000", &field]).await, redis::Value::Nil);
    let fair = c.fair_lock(name);
    let owner = fair.owner().unwrap().to_owned();
    let waiter = tokio::spawn(async move { fair.acquire().await.map(|g| (g, Instant::now())) });
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let q: Vec<String> = redis::cmd("LRANGE").arg(&queue).arg(0).arg(-1).query_async(&mut con).await.unwrap();
            if q == vec![owner.clone()] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let score: Option<f64> = redis::cmd("ZSCORE").arg(&timeouts).arg(&owner).query_async(&mut con).await.unwrap();
    assert!(score.is_some(), "the waiter has a place in the timeout zset");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished());
    let released = Instant::now();
    eval(&mut con, RFAIR_RELEASE, &[&n, &queue, &timeouts, &channel], &["0", &field]).await;
    let (g, at) = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    let latency = at.duration_since(released);
    eprintln!("woken {latency:?} after the Redisson-side release");
    assert!(latency < WAKE, "the fair waiter noticed Redisson's unlock after {latency:?}");
    let q: i64 = redis::cmd("EXISTS").arg(&queue).query_async(&mut con).await.unwrap();
    assert_eq!(q, 0, "the granted waiter left the queue");
    g.release().await.unwrap();
}

/// A count-down latch set and counted down the way Redisson does (its exact key with
/// `?names=bare`, `redisson_countdownlatch__channel__{N}`, messages 1 and 0) wakes a
/// baton waiter when it reaches zero; baton's `try_set_count` is Redisson's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_latch_wakes_baton_waiter() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton("&names=bare").await;
    let name = "boot";
    let n = format!("{prefix}{name}");
    let channel = format!("redisson_countdownlatch__channel__{{{n}}}");
    let mut con = raw().await;
    assert_eq!(eval(&mut con, LATCH_SET, &[&n, &channel], &["1", "2"]).await, redis::Value::Int(1));
    let latch = c.count_down_latch(name);
    assert_eq!(latch.count().await.unwrap(), 2);
    assert!(!latch.try_set_count(5).await.unwrap(), "set only when zero, as Redisson's trySetCount");
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait().await.map(|()| Instant::now()) }
    });
    eval(&mut con, LATCH_DOWN, &[&n, &channel], &["0"]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished());
    let opened = Instant::now();
    eval(&mut con, LATCH_DOWN, &[&n, &channel], &["0"]).await;
    let at = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    let latency = at.duration_since(opened);
    eprintln!("woken {latency:?} after the Redisson-side release");
    assert!(latency < WAKE, "the latch waiter noticed Redisson's countDown after {latency:?}");
    assert!(latch.try_set_count(3).await.unwrap());
    let v: String = redis::cmd("GET").arg(&n).query_async(&mut con).await.unwrap();
    assert_eq!(v, "3", "baton's count is Redisson's key");
}

/// Redisson readers (hash `mode` = read, field + `{N}:<field>:rwlock_timeout:1`) keep a
/// baton writer out and let baton readers in; a baton read hold reads back the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_readers_and_baton_rw_lock() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton("&names=bare").await;
    let name = "doc";
    let n = format!("{prefix}{name}");
    let field = redisson_field();
    let mut con = raw().await;
    let timeout_key = format!("{{{n}}}:{field}:rwlock_timeout:1");
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(&n)
        .arg("mode")
        .arg("read")
        .arg(&field)
        .arg(1)
        .cmd("SET")
        .arg(&timeout_key)
        .arg(1)
        .arg("PX")
        .arg(30_000)
        .cmd("PEXPIRE")
        .arg(&n)
        .arg(30_000)
        .query_async(&mut con)
        .await
        .unwrap();
    let rw = c.rw_lock(name);
    assert!(rw.try_write().await.unwrap().is_none(), "a baton writer got in beside a Redisson reader");
    let r = rw.try_read().await.unwrap().expect("readers share");
    let reader = rw.inspect().await.unwrap().holders.into_iter().find(|h| h.owner != field).unwrap().owner;
    let count: String = redis::cmd("HGET").arg(&n).arg(&reader).query_async(&mut con).await.unwrap();
    assert_eq!(count, "1");
    let pttl: i64 =
        redis::cmd("PTTL").arg(format!("{{{n}}}:{reader}:rwlock_timeout:1")).query_async(&mut con).await.unwrap();
    assert!(pttl > 0, "baton's read hold has Redisson's timeout key");
    r.release().await.unwrap();
    // The Redisson reader's timeout key runs out: its hold is gone for baton too.
    let _: () = redis::cmd("PEXPIRE").arg(&timeout_key).arg(1).query_async(&mut con).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let w = rw
        .write_timeout(Duration::from_secs(5))
        .await
        .expect("the Redisson reader's lease ended; the writer must get in");
    let mode: String = redis::cmd("HGET").arg(&n).arg("mode").query_async(&mut con).await.unwrap();
    assert_eq!(mode, "write");
    w.release().await.unwrap();
}

/// Permits of a baton `PermitSemaphore` are Redisson's (`?names=bare&free=keep`): the count `N`,
/// the zset `{N}:timeout` of 16-byte ids; a permit taken by Redisson counts against
/// baton's, and its release by id — `ZREM`, `INCRBY`, a message on `redisson_sc:{N}` —
/// wakes a baton waiter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_permits_and_baton_permit_semaphore() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    // `free=keep`: the count stays once every permit is back, as Redisson's clients expect
    // of a semaphore they share (by default baton removes a free semaphore's keys).
    let (c, prefix) = baton("&names=bare&free=keep").await;
    let name = "exports";
    let n = format!("{prefix}{name}");
    let (zset, channel) = (format!("{{{n}}}:timeout"), format!("redisson_sc:{{{n}}}"));
    let mut con = raw().await;
    let sem = c.permit_semaphore_with(name, 2, LockOptions::new());
    let p = sem.acquire().await.unwrap();
    let id = hex(p.id());
    let score: Option<f64> = redis::cmd("ZSCORE").arg(&zset).arg(&id).query_async(&mut con).await.unwrap();
    assert!(score.is_some(), "the permit id is a 16-byte member of {{N}}:timeout");
    let left: i64 = redis::cmd("GET").arg(&n).query_async(&mut con).await.unwrap();
    assert_eq!(left, 1);
    // Redisson takes the last permit.
    let far = 4_102_444_800_000u64; // 2100-01-01: Redisson's client-clock expiry
    let theirs = redisson_take_permit(&mut con, &n, far).await;
    assert!(sem.try_acquire().await.unwrap().is_none());
    let waiter = tokio::spawn(async move { sem.acquire().await.map(|p| (p, Instant::now())) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished());
    // Redisson's release(id): ZREM, INCRBY, publish the new count.
    let released = Instant::now();
    let v: i64 = redis::pipe()
        .cmd("ZREM")
        .arg(&zset)
        .arg(&theirs)
        .ignore()
        .cmd("INCRBY")
        .arg(&n)
        .arg(1)
        .query_async::<(i64,)>(&mut con)
        .await
        .unwrap()
        .0;
    let _: () = redis::cmd("PUBLISH").arg(&channel).arg(v).query_async(&mut con).await.unwrap();
    let (q, at) = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    let latency = at.duration_since(released);
    eprintln!("woken {latency:?} after the Redisson-side release");
    assert!(latency < WAKE, "the permit waiter noticed Redisson's release after {latency:?}");
    q.release().await.unwrap();
    p.release().await.unwrap();
    let left: i64 = redis::cmd("GET").arg(&n).query_async(&mut con).await.unwrap();
    assert_eq!(left, 2);
}

/// A semaphore's size lives beside Redisson's keys, not in them: `size` in baton's side
/// hash `{N}:baton` (no ttl), while `N` stays Redisson's bare count of free permits and
/// `{N}:timeout` its zset. Redisson's permits count as held: a handle of another size is
/// refused until they are back too, and then the count moves by the difference. A counter
/// Redisson made itself (`trySetPermits`) records no size and serves any.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_size_beside_redissons_keys() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton("&names=bare").await;
    let n = format!("{prefix}parking");
    let (zset, meta) = (format!("{{{n}}}:timeout"), format!("{{{n}}}:baton"));
    let mut con = raw().await;
    let (three, five) = (c.semaphore("parking", 3), c.semaphore("parking", 5));
    let p = three.acquire().await.unwrap();
    let get = |k: String| redis::cmd("GET").arg(k).to_owned();
    let left: i64 = get(n.clone()).query_async(&mut con).await.unwrap();
    assert_eq!(left, 2, "N is the count of free permits, as Redisson keeps it");
    let held: i64 = redis::cmd("ZCARD").arg(&zset).query_async(&mut con).await.unwrap();
    assert_eq!(held, 1);
    let size: Option<String> = redis::cmd("HGET").arg(&meta).arg("size").query_async(&mut con).await.unwrap();
    assert_eq!(size.as_deref(), Some("3"));
    let ttl: i64 = redis::cmd("PTTL").arg(&meta).query_async(&mut con).await.unwrap();
    assert_eq!(ttl, -1, "the record lives as long as the counter");
    // Redisson takes a permit too; baton's goes back: Redisson's still holds the size.
    let theirs = redisson_take_permit(&mut con, &n, 4_102_444_800_000).await;
    p.release().await.unwrap();
    let e = five.try_acquire().await.unwrap_err();
    assert_eq!(e.kind(), baton::ErrorKind::InvalidArgument, "{e}");
    // Redisson's release(id): every permit is back, and the size may change.
    let _: () = redis::pipe()
        .cmd("ZREM")
        .arg(&zset)
        .arg(&theirs)
        .cmd("INCRBY")
        .arg(&n)
        .arg(1)
        .query_async(&mut con)
        .await
        .unwrap();
    let q = five.acquire_many(2).await.unwrap();
    let left: i64 = get(n.clone()).query_async(&mut con).await.unwrap();
    assert_eq!(left, 3, "the count moved from 3 to 5 with the size");
    let size: Option<String> = redis::cmd("HGET").arg(&meta).arg("size").query_async(&mut con).await.unwrap();
    assert_eq!(size.as_deref(), Some("5"));
    q.release().await.unwrap();

    // A counter of Redisson's own (`trySetPermits(10)`): no record, any size.
    let n2 = format!("{prefix}theirs");
    let _: () = redis::cmd("SET").arg(&n2).arg(10).arg("NX").query_async(&mut con).await.unwrap();
    let a = c.semaphore("theirs", 3).acquire().await.unwrap();
    let b = c.semaphore("theirs", 5).acquire().await.unwrap();
    assert_eq!(c.semaphore("theirs", 5).inspect().await.unwrap().permits, None);
    let left: i64 = get(n2.clone()).query_async(&mut con).await.unwrap();
    assert_eq!(left, 8);
    let recorded: i64 =
        redis::cmd("HEXISTS").arg(format!("{{{n2}}}:baton")).arg("size").query_async(&mut con).await.unwrap();
    assert_eq!(recorded, 0);
    a.release().await.unwrap();
    b.release().await.unwrap();
}

/// Redisson's permit acquire on `N` (`RedissonPermitExpirableSemaphore.tryAcquireAsync`):
/// `DECRBY N 1` and a 16-byte id into `{N}:timeout` scored `expiry`; the id.
async fn redisson_take_permit(con: &mut MultiplexedConnection, n: &str, expiry: u64) -> Vec<u8> {
    let id = uuid::Uuid::new_v4().into_bytes().to_vec();
    let zset = format!("{{{n}}}:timeout");
    let _: () = redis::pipe()
        .cmd("DECRBY")
        .arg(n)
        .arg(1)
        .cmd("ZADD")
        .arg(zset)
        .arg(expiry)
        .arg(&id)
        .query_async(con)
        .await
        .unwrap();
    id
}

/// A 32-hex permit id as the 16 bytes Redisson stores.
fn hex(id: &str) -> Vec<u8> {
    (0..16).map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).unwrap()).collect()
}

/// This machine's wall clock in ms: what Redisson's `System.currentTimeMillis()` gives.
fn client_ms() -> u64 {
    u64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// `?clock=client` scores exactly as Redisson does: a leased permit's `{N}:timeout` score
/// is the client's `System.currentTimeMillis()` at the acquire plus the lease
/// (`RedissonPermitExpirableSemaphore.calcTimeout`), and a fair waiter's
/// `redisson_lock_timeout:{N}` score is the client's clock at its last attempt plus its
/// queue ttl. Bracketed by this test's clock reads before and after the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_clock_scores_as_redisson() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (c, prefix) = baton("&names=bare&clock=client").await;
    let mut con = raw().await;
    let n = format!("{prefix}permits");
    let lease = 20_000u64;
    let sem = c.permit_semaphore_with("permits", 2, LockOptions::new().ttl(Duration::from_millis(lease)));
    let before = client_ms();
    let p = sem.acquire().await.unwrap();
    let after = client_ms();
    let score: f64 =
        redis::cmd("ZSCORE").arg(format!("{{{n}}}:timeout")).arg(hex(p.id())).query_async(&mut con).await.unwrap();
    assert!(
        (before + lease) as f64 <= score && score <= (after + lease) as f64,
        "permit score {score} is not the client's clock + lease ([{}, {}])",
        before + lease,
        after + lease
    );
    p.release().await.unwrap();

    // A fair waiter behind a Redisson hold. Its place is refreshed at most every
    // queue ttl / 3 (20 s here): the bracket is the waiter's start and the moment it is seen.
    let name = "fair/clock";
    let n = format!("{prefix}{name}");
    let (queue, timeouts) = (format!("redisson_lock_queue:{{{n}}}"), format!("redisson_lock_timeout:{{{n}}}"));
    let field = redisson_field();
    assert_eq!(eval(&mut con, RLOCK_ACQUIRE, &[&n], &["30000", &field]).await, redis::Value::Nil);
    let qttl = 60_000u64;
    let fair = c.fair_lock_with(name, LockOptions::new().queue_ttl(Duration::from_millis(qttl)));
    let owner = fair.owner().unwrap().to_owned();
    let before = client_ms();
    let waiter = tokio::spawn(async move { fair.acquire_timeout(Duration::from_secs(10)).await });
    let score = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let s: Option<f64> = redis::cmd("ZSCORE").arg(&timeouts).arg(&owner).query_async(&mut con).await.unwrap();
            if let Some(s) = s {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the baton waiter took no place within 5 s");
    let after = client_ms();
    assert!(
        (before + qttl) as f64 <= score && score <= (after + qttl) as f64,
        "place score {score} is not the client's clock + queue ttl ([{}, {}])",
        before + qttl,
        after + qttl
    );
    waiter.abort();
    let _: () = redis::cmd("DEL").arg(&n).arg(&queue).arg(&timeouts).query_async(&mut con).await.unwrap();
}

/// With `?clock=client`, entries Redisson wrote with its client-clock scores are honoured
/// on that clock: a Redisson waiter's place at the queue head (score = its
/// `currentTime + ttl + threadWaitTime`, `RedissonFairLock.tryLockInnerAsync`) keeps a baton
/// fair waiter out of a free lock until the score passes, and a Redisson permit leased
/// until `currentTimeMillis() + 700` counts against baton's permits until then and is
/// returned to the count afterwards (as Redisson's next acquire would).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_client_clock_entries_are_honoured() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    // `free=keep`: Redisson takes a permit of the semaphore baton made, after baton's
    // permit is back (by default baton would remove the free semaphore's count).
    let (c, prefix) = baton("&names=bare&clock=client&free=keep").await;
    let mut con = raw().await;
    let name = "fair/theirs";
    let n = format!("{prefix}{name}");
    let (queue, timeouts) = (format!("redisson_lock_queue:{{{n}}}"), format!("redisson_lock_timeout:{{{n}}}"));
    // A Redisson waiter queued behind a hold that has just gone: lock free, its place
    // scored `now + 0 (pttl) + 700 (wait)` on the Redisson side's clock.
    let theirs = redisson_field();
    let until = client_ms() + 700;
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(&timeouts)
        .arg(until)
        .arg(&theirs)
        .cmd("RPUSH")
        .arg(&queue)
        .arg(&theirs)
        .query_async(&mut con)
        .await
        .unwrap();
    let fair = c.fair_lock(name);
    assert!(fair.try_acquire().await.unwrap().is_none(), "baton jumped the Redisson waiter's place");
    // Bounded: the place ends 700 ms after it was written; 5 s leaves room for a loaded machine.
    let g = fair.acquire_timeout(Duration::from_secs(5)).await.expect("the Redisson place expired on the client clock");
    assert!(client_ms() >= until, "granted before the Redisson place's client-clock score passed");
    g.release().await.unwrap();

    let n = format!("{prefix}exports");
    let zset = format!("{{{n}}}:timeout");
    let sem = c.permit_semaphore_with("exports", 1, LockOptions::new());
    let p = sem.acquire().await.unwrap();
    p.release().await.unwrap();
    // Redisson's acquire with a 700 ms lease, scored with its client clock.
    let until = client_ms() + 700;
    let id = redisson_take_permit(&mut con, &n, until).await;
    assert!(sem.try_acquire().await.unwrap().is_none(), "the Redisson permit did not count");
    let q = sem.acquire_timeout(Duration::from_secs(5)).await.expect("the Redisson permit's lease ended");
    assert!(client_ms() >= until, "the Redisson permit came back before its client-clock score passed");
    let gone: Option<f64> = redis::cmd("ZSCORE").arg(&zset).arg(&id).query_async(&mut con).await.unwrap();
    assert_eq!(gone, None, "the expired Redisson permit left the zset");
    q.release().await.unwrap();
}

/// `?clock=` takes `server` or `client` only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_option_is_validated() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let url = server();
    let sep = if url.contains('?') { '&' } else { '?' };
    let e = Client::connect(&format!("{url}{sep}clock=local")).await.unwrap_err();
    assert_eq!(e.kind(), baton::ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("`clock`") && e.to_string().contains("`client`"), "{e}");
}
