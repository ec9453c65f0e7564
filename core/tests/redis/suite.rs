//! The behaviour suite and the cross-process checks on `redis://` (the server of
//! `scripts/services`, URL in `BATON_TEST_REDIS_URL`), each test under a key prefix of
//! its own; and the Redis store's own checks (URL forms, passwords, scripts lost by the
//! server, many leases renewed in pipelined batches).
#![cfg(feature = "redis")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};
use behaviour::{Store, bounded, unique, with_option};

/// The server's URL (unset: see `env_server`).
fn server() -> String {
    behaviour::env_server("BATON_TEST_REDIS_URL", "Redis")
}

/// The server as it is: every check names its keys with `unique()` (a UUID each), so
/// tests and runs never collide; a `?prefix=` would also make the suite's 255-byte names
/// too long.
fn store() -> Store {
    Store { url: server(), keep: None }
}

/// The server under a prefix of its own (this file's own checks).
fn prefixed(extra: &str) -> String {
    let prefix = format!("baton-test:{}:", uuid::Uuid::new_v4().simple());
    with_option(&with_option(&server(), &format!("prefix={prefix}")), extra).trim_end_matches(['?', '&']).to_owned()
}

behaviour_suite!(crate::suite::store; except election);
cross_process_suite!(crate::suite::store);

/// A plain connection to the test server, to look at the keys.
async fn raw() -> redis::aio::MultiplexedConnection {
    let url = server();
    let base = url.split('?').next().unwrap().to_owned();
    redis::Client::open(base).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// URL forms: hosts, ports, databases and options are checked before connecting.
#[tokio::test]
async fn url_forms() {
    for (url, kind, needle) in [
        ("redis://127.0.0.1:6379,127.0.0.1:6380", ErrorKind::InvalidUrl, "several hosts"),
        ("redis://127.0.0.1:notaport", ErrorKind::InvalidUrl, "notaport"),
        ("redis://127.0.0.1:0", ErrorKind::InvalidUrl, "127.0.0.1:0"),
        ("redis://[::1", ErrorKind::InvalidUrl, "[::1"),
        ("redis://127.0.0.1:6379/x", ErrorKind::InvalidUrl, "database number"),
        ("redis://127.0.0.1:6379?timeout=0s", ErrorKind::InvalidArgument, "timeout"),
        ("redis://127.0.0.1:6379?nope=1", ErrorKind::InvalidUrl, "nope"),
        ("redis://127.0.0.1:6379?names=weird", ErrorKind::InvalidArgument, "weird"),
        ("rediss://u:hunter2@127.0.0.1:6379?ca=/nonexistent/ca.pem", ErrorKind::InvalidArgument, "ca"),
        ("redis://u:hunter2@127.0.0.1:6379?ca=/tmp/ca.pem", ErrorKind::InvalidArgument, "rediss://"),
        ("redis://127.0.0.1:6379?scheme=hash", ErrorKind::InvalidArgument, "scheme"),
        ("redis+cluster://127.0.0.1:7101,127.0.0.1:x", ErrorKind::InvalidUrl, "127.0.0.1:x"),
        ("redis+cluster://127.0.0.1:7101/2", ErrorKind::InvalidUrl, "database 0"),
        ("redis+sentinel://127.0.0.1:26379", ErrorKind::InvalidUrl, "master's name"),
        ("redis+sentinel://127.0.0.1:26379/mymaster/x", ErrorKind::InvalidUrl, "master's name"),
    ] {
        let e = Client::connect(url).await.expect_err(url);
        assert_eq!(e.kind(), kind, "{url}: {e}");
        assert!(e.to_string().contains(needle), "{url}: `{e}` should mention `{needle}`");
        assert!(!format!("{e} {e:?}").contains("hunter2"), "{url}: {e:?}");
    }
}

/// A refused connection is a prompt `Connection` error without the password; a wrong
/// password is one too.
#[tokio::test]
async fn connection_errors_hide_passwords() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let t0 = std::time::Instant::now();
    let e = Client::connect("redis://u:hunter2@127.0.0.1:1").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(t0.elapsed() < Duration::from_secs(10), "gave up after {:?}", t0.elapsed());
    assert!(!format!("{e} {e:?}").contains("hunter2"), "{e:?}");
    let base = server().split('?').next().unwrap().to_owned();
    let (_, rest) = base.split_once("://").unwrap();
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let e = Client::connect(&format!("redis://nobody:hunter2@{rest}")).await.unwrap_err();
    assert!(!format!("{e} {e:?}").contains("hunter2"), "{e:?}");
    let c = Client::connect(&prefixed("")).await.unwrap();
    assert!(!format!("{c:?}").contains("hunter2"));
}

/// 1 000 watchdog leases are renewed without loss (pipelined batches of 100).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_leases_renewed() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let url = prefixed("");
    let c = Client::connect(&url).await.unwrap();
    let opts = LockOptions::new().lease(Duration::from_millis(1500)).renew_every(Duration::from_millis(500));
    let base = unique("many");
    let mut guards = Vec::new();
    for i in 0..1000 {
        guards.push(c.lock_with(&format!("{base}/{i}"), opts.clone()).acquire().await.unwrap());
    }
    let before = c.store_round_trips().expect("the Redis store counts its round trips");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let trips = c.store_round_trips().unwrap() - before;
    assert!(guards.iter().all(|g| !g.is_lost()), "a renewed lease was lost");
    // About 5 periods × 10 batches of 100 (plus partial batches where acquisitions spread
    // over a period boundary, and retried batches): ~50 on an idle machine, 1 083 once on a
    // loaded 2-core one; one request per lease would be ≥ 5 000. Generous both ways, far
    // from either mistake.
    assert!((5..=2500).contains(&trips), "{trips} round trips renewed 1 000 leases for 2.5 s");
    let other = Client::connect(&url).await.unwrap();
    assert!(other.lock(&format!("{base}/999")).try_acquire().await.unwrap().is_none());
}

/// `store_round_trips` counts requests: an uncontended acquire and release are one
/// script each; stores that do not count say `None`.
#[tokio::test]
async fn round_trips_counted() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let c = Client::connect(&prefixed("")).await.unwrap();
    let lock = c.lock(&unique("trips"));
    let before = c.store_round_trips().unwrap();
    lock.acquire().await.unwrap().release().await.unwrap();
    assert_eq!(c.store_round_trips().unwrap() - before, 2);
    let m = Client::connect(&format!("memory://trips-{}", uuid::Uuid::new_v4().simple())).await.unwrap();
    assert_eq!(m.store_round_trips(), None);
}

/// `?names=bare` puts every kind under Redisson's exact name: a semaphore `x` is the
/// counter `x` (as `RPermitExpirableSemaphore("x")`), and a name used by two kinds is a
/// `Backend` error naming the clash, not a hang or a panic. By default the kinds other
/// than locks live under `semaphore:`, `rwlock:`, `latch:`.
#[tokio::test]
async fn bare_and_typed_names() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let (bare, typed) = (prefixed("names=bare"), prefixed(""));
    let pre = |url: &str| url.split("prefix=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let name = unique("names");
    let mut raw = raw().await;
    let c = Client::connect(&bare).await.unwrap();
    let p = c.semaphore(&name, 3).acquire().await.unwrap();
    let left: i64 = redis::cmd("GET").arg(format!("{}{name}", pre(&bare))).query_async(&mut raw).await.unwrap();
    assert_eq!(left, 2);
    let e =
        bounded("a lock on a semaphore's name", Duration::from_secs(5), c.lock(&name).try_acquire()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Backend, "{e}");
    assert!(e.to_string().contains("another kind"), "{e}");
    p.release().await.unwrap();
    let t = Client::connect(&typed).await.unwrap();
    let p = t.semaphore(&name, 3).acquire().await.unwrap();
    let key = format!("semaphore:{}{name}", pre(&typed));
    let left: i64 = redis::cmd("GET").arg(&key).query_async(&mut raw).await.unwrap();
    assert_eq!(left, 2);
    assert!(t.count_down_latch(&name).try_set_count(1).await.unwrap(), "kinds do not clash");
    p.release().await.unwrap();
}
