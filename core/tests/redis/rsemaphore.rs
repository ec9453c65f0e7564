//! `redis://…?semaphore=rsemaphore` (the server of `scripts/services`,
//! `BATON_TEST_REDIS_URL`): semaphores on Redisson's bare `RSemaphore` counter. The
//! behaviour suite's semaphore, permit and error checks run on it — all but
//! `semaphore::crashed_permits_return`, which this form cannot pass by design (a permit
//! has no lease in Redis: `crashed_permits_stay_taken` below shows the gap) — and interop
//! with Redisson's `RSemaphore` scripts, the plain `redis` crate playing Redisson.
#![cfg(feature = "redis")]

use baton_testkit::{behaviour, behaviour_suite};
use std::time::Duration;

use baton::{Client, LockOptions};
use behaviour::{Store, stalled, unique, with_option};
use redis::aio::MultiplexedConnection;
use tokio::time::Instant;

fn server() -> String {
    behaviour::env_server("BATON_TEST_REDIS_URL", "RSemaphore")
}

fn store() -> Store {
    Store::from_env("BATON_TEST_REDIS_URL", "RSemaphore", "semaphore=rsemaphore")
}

behaviour_suite!(@tests crate::rsemaphore::store;
    // Not here: semaphore::crashed_permits_return (the documented gap of this form).
    semaphore::never_more_than_permits, semaphore::many_and_available,
    semaphore::waiter_woken_and_dropped_permit_returns,
    permits::ids_and_release_by_id, permits::lease_expiry_and_update, permits::ids_unique_across_clients,
    permits::crashed_watchdog_permit_returns, permits::permit_lost_when_released_elsewhere,
    lock::close_releases_every_primitive, lock::exclusion_counter,
    errors::bad_permits, errors::bad_store_options, errors::closed_everywhere,
);

/// Well under the engine's 1 s re-check: a wake-up this fast came from the message.
const WAKE: Duration = Duration::from_millis(500);

async fn raw() -> MultiplexedConnection {
    let base = server().split('?').next().unwrap().to_owned();
    redis::Client::open(base).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// `RedissonSemaphore.tryAcquireAsync`: KEYS = [N], ARGV = [permits]; 1 when taken.
const RSEM_TRY_ACQUIRE: &str = "
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
  local val = redis.call('decrby', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;";

/// `RedissonSemaphore.releaseAsync`: KEYS = [N, channel], ARGV = [permits, 'publish'].
const RSEM_RELEASE: &str = "
local value = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call(ARGV[2], KEYS[2], value);";

async fn eval(con: &mut MultiplexedConnection, script: &str, keys: &[&str], args: &[&str]) -> redis::Value {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(keys.len()).arg(keys).arg(args);
    cmd.query_async(con).await.unwrap()
}

/// Redisson's `RSemaphore` and baton share the counter `N` (Redisson's exact name with
/// `?names=bare`): permits Redisson takes make baton wait, Redisson's release (INCRBY and
/// the new count on `redisson_sc:{N}`) wakes the baton waiter at once, and baton's
/// permits are taken from and given back to the same counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_rsemaphore_and_baton_share_permits() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let prefix = format!("rsem:{}:", uuid::Uuid::new_v4().simple());
    let url = with_option(&with_option(&store().url, "names=bare"), &format!("prefix={prefix}"));
    let c = Client::connect(&url).await.unwrap();
    let name = "pool";
    let key = format!("{prefix}{name}");
    let channel = format!("redisson_sc:{{{key}}}");
    let mut con = raw().await;
    // Redisson's trySetPermits(2) first, then it takes both.
    let _: () = redis::cmd("SET").arg(&key).arg(2).query_async(&mut con).await.unwrap();
    assert_eq!(eval(&mut con, RSEM_TRY_ACQUIRE, &[&key], &["2"]).await, redis::Value::Int(1));
    let sem = c.semaphore(name, 2);
    assert!(sem.try_acquire().await.unwrap().is_none(), "baton ignored Redisson's permits");
    let waiter = {
        let sem = c.semaphore(name, 2);
        tokio::spawn(async move {
            let p = sem.acquire().await.unwrap();
            (Instant::now(), p)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    eval(&mut con, RSEM_RELEASE, &[&key, &channel], &["1", "publish"]).await;
    let (at, permit) = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("waiter hung").unwrap();
    assert!(at - released < WAKE, "woken {:?} after Redisson's release", at - released);
    let left: i64 = redis::cmd("GET").arg(&key).query_async(&mut con).await.unwrap();
    assert_eq!(left, 0, "baton took its permit from Redisson's counter");
    // Redisson cannot take one now; baton's release gives it back to the counter.
    assert_eq!(eval(&mut con, RSEM_TRY_ACQUIRE, &[&key], &["1"]).await, redis::Value::Int(0));
    permit.release().await.unwrap();
    assert_eq!(eval(&mut con, RSEM_TRY_ACQUIRE, &[&key], &["1"]).await, redis::Value::Int(1));
    let info = sem.inspect().await.unwrap();
    assert!(info.holders.is_empty(), "{:?}", info.holders);
}

/// The gap of this form, shown: a holder that stops (its runtime gone, as in a crash)
/// keeps its permit past any lease — only a release gives it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_permits_stay_taken() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let url = store().url;
    let name = unique("gap");
    let n = name.clone();
    stalled(&url, move |c| async move {
        let opts = LockOptions::new().lease(Duration::from_millis(600)).renew_every(Duration::from_millis(200));
        std::mem::forget(c.semaphore_with(&n, 1, opts).acquire().await.unwrap());
    });
    let c = Client::connect(&url).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(c.semaphore(&name, 1).try_acquire().await.unwrap().is_none(), "the permit came back by itself");
    let info = c.semaphore(&name, 1).inspect().await.unwrap();
    assert_eq!(info.holders.len(), 1, "the stopped holder is still recorded");
}
