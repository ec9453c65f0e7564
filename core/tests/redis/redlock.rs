//! The behaviour suite on `redlock://` (the 5 independent Redis servers of
//! `scripts/services`, URL in `BATON_TEST_REDLOCK_URL`), for every primitive Redlock
//! runs: locks, read-write locks, semaphores and permit semaphores. A fair lock and a
//! count-down latch are `Unsupported` there (checked below), so the checks that use them
//! are left out. Node faults (killed and restarted nodes) are in `redlock_faults.rs`, on
//! servers of the test's own.
#![cfg(feature = "redlock")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use std::time::Duration;

use baton::{Client, ErrorKind};
use behaviour::{Store, bounded, eventually, expect_err, unique, with_option};

fn server() -> String {
    behaviour::env_server("BATON_TEST_REDLOCK_URL", "Redlock")
}

/// A node timeout of 3 s instead of the lease-derived default (1 s at most): beside the
/// other test group on 2 cores a node step can take over 1 s, and a step timed out may
/// still land after the check that follows it. The faults on nodes, where the timeout is
/// the point, are in `redlock_faults.rs` with 500 ms.
fn store() -> Store {
    Store::from_env("BATON_TEST_REDLOCK_URL", "Redlock", "node_timeout=3s")
}

// A fair lock and a count-down latch are `Unsupported` on Redlock (checked below).
behaviour_suite!(crate::redlock::store; except fair, latch, election);
// `lock::fencing_tokens_grow` without its last grant, a fair lock's.
behaviour_suite!(@tests crate::redlock::store; lock::fencing_tokens_grow_without_fair);
cross_process_suite!(crate::redlock::store);

/// A fair lock and a count-down latch are refused with a clear `Unsupported`, before
/// anything is written.
#[tokio::test]
async fn fair_locks_and_latches_are_unsupported() {
    baton_testkit::needs_server!("BATON_TEST_REDLOCK_URL");
    let c = Client::connect(&server()).await.unwrap();
    let name = unique("rl-unsupported");
    expect_err(c.fair_lock(&name).try_acquire().await, ErrorKind::Unsupported, "fair locks are not available");
    let latch = c.count_down_latch(&name);
    expect_err(latch.try_set_count(2).await, ErrorKind::Unsupported, "count-down latches are not available");
    expect_err(latch.count_down().await, ErrorKind::Unsupported, "redlock://");
    expect_err(latch.count().await, ErrorKind::Unsupported, "redlock://");
    // The lock of the same name is untouched.
    assert!(c.lock(&name).try_acquire().await.unwrap().is_some());
}

/// The nodes of a round answer the same token (the round's token floor is ahead of their
/// clocks), so an uncontended cycle is two requests a node, the acquire and the release,
/// with no write-back of the token between them; tokens still grow.
#[tokio::test]
async fn an_uncontended_cycle_is_two_requests_a_node() {
    baton_testkit::needs_server!("BATON_TEST_REDLOCK_URL");
    let c = Client::connect(&server()).await.unwrap();
    let nodes = server().trim_start_matches("redlock://").split(',').count() as u64;
    let lock = c.lock(&unique("rl-two-requests"));
    // A first cycle loads the scripts on nodes that do not have them (`NOSCRIPT`, then
    // `EVAL`: one request more on each).
    let first = lock.acquire().await.unwrap();
    let mut last = first.token().get();
    first.release().await.unwrap();
    for _ in 0..5 {
        c.settled().await;
        let before = c.store_round_trips().expect("redlock:// counts its requests");
        let g = lock.acquire().await.unwrap();
        assert!(g.token().get() > last, "tokens grow: {} after {last}", g.token().get());
        last = g.token().get();
        g.release().await.unwrap();
        c.settled().await;
        assert_eq!(c.store_round_trips().unwrap() - before, 2 * nodes, "requests of one cycle");
    }
}

/// URL forms and options: checked before any node is asked.
#[tokio::test]
async fn url_forms_and_options() {
    baton_testkit::needs_server!("BATON_TEST_REDLOCK_URL");
    let base = server();
    for (opt, kind, needle) in [
        ("retry_count=-1", ErrorKind::InvalidArgument, "retry_count"),
        ("retry_count=1001", ErrorKind::InvalidArgument, "0 to 1000"),
        ("retry_delay=soon", ErrorKind::InvalidArgument, "retry_delay"),
        ("retry_jitter=2h", ErrorKind::InvalidArgument, "retry_jitter"),
        ("node_timeout=0ms", ErrorKind::InvalidArgument, "node_timeout"),
        ("drift_factor=0.5", ErrorKind::InvalidArgument, "drift_factor"),
        ("drift_factor=NaN", ErrorKind::InvalidArgument, "drift_factor"),
        ("semaphore=rsemaphore", ErrorKind::InvalidUrl, "unknown option `semaphore`"),
        ("bogus=1", ErrorKind::InvalidUrl, "unknown option `bogus`"),
    ] {
        expect_err(Client::connect(&with_option(&base, opt)).await, kind, needle);
    }
    expect_err(Client::connect("redlock://").await, ErrorKind::InvalidUrl, "names no node");
    expect_err(Client::connect("redlock://127.0.0.1:7001,127.0.0.1:7001").await, ErrorKind::InvalidUrl, "twice");
    expect_err(Client::connect("redlock://127.0.0.1:notaport").await, ErrorKind::InvalidUrl, "notaport");
    // Every option at once, and the node options handed to each node.
    let all = with_option(
        &base,
        "retry_count=0&retry_delay=0ms&retry_jitter=10ms&node_timeout=500ms&drift_factor=0.02&timeout=2s&names=typed",
    );
    let c = Client::connect(&all).await.unwrap();
    let g = c.lock(&unique("rl-opts")).try_acquire().await.unwrap().expect("free lock");
    g.release().await.unwrap();
}

/// The same name on a single node and on Redlock: a grant on Redlock is visible on each
/// node as Redisson's `RLock` hash, and every node's token counter holds the token. The
/// grant returns once a quorum granted; the other nodes' answers land just after.
#[tokio::test]
async fn each_node_holds_the_grant_and_the_token() {
    baton_testkit::needs_server!("BATON_TEST_REDLOCK_URL");
    let url = server();
    let c = Client::connect(&url).await.unwrap();
    let name = unique("rl-layout");
    let g = c.lock(&name).try_acquire().await.unwrap().expect("free lock");
    let token = g.token().get();
    let hosts = url.trim_start_matches("redlock://").split(['/', '?']).next().unwrap().to_owned();
    for h in hosts.split(',') {
        let mut con =
            redis::Client::open(format!("redis://{h}")).unwrap().get_multiplexed_async_connection().await.unwrap();
        // Bound: the slowest node answers within the node timeout (at most 1 s).
        eventually(&format!("node {h} holds the lock hash"), Duration::from_secs(3), || {
            let mut con = con.clone();
            let name = name.clone();
            async move { redis::cmd("HLEN").arg(&name).query_async::<i64>(&mut con).await.unwrap() == 1 }
        })
        .await;
        let counter: u64 =
            redis::cmd("GET").arg(format!("redisson_lock_token:{{{name}}}")).query_async(&mut con).await.unwrap();
        assert!(counter >= token, "node {h}: counter {counter} below the token {token}");
    }
    let info = c.lock(&name).inspect().await.unwrap();
    assert!(info.is_held());
    g.release().await.unwrap();
    bounded("released lock is free", Duration::from_secs(5), async {
        assert!(c.lock(&name).try_acquire().await.unwrap().is_some());
    })
    .await;
}

/// A multi-lock over a Redlock name and a SQLite name: all-or-nothing across both stores
/// (a busy half gives the other back), one timeout for the whole, both held together.
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lock_across_redlock_and_sqlite() {
    baton_testkit::needs_server!("BATON_TEST_REDLOCK_URL");
    let dir = tempfile::tempdir().unwrap();
    let sql = Client::connect(&format!("sqlite://{}", dir.path().join("multi.db").display())).await.unwrap();
    let rl = Client::connect(&server()).await.unwrap();
    let (a, b) = (unique("rl-multi-sql"), unique("rl-multi-redlock"));
    let both = || baton::MultiLock::new([sql.lock(&a), rl.lock(&b)]);
    // The Redlock half is busy: nothing is held afterwards.
    let blocker = rl.lock(&b).acquire().await.unwrap();
    assert!(both().try_acquire().await.unwrap().is_none());
    bounded("partial grant released", Duration::from_secs(5), async {
        while sql.inspect(&a).await.unwrap().is_held() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // One timeout across both: the whole call ends after about 300 ms (bound: 3 s on a
    // loaded machine), as `Timeout`, with the SQLite half given back.
    let t0 = tokio::time::Instant::now();
    let e = both().acquire_timeout(Duration::from_millis(300)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(t0.elapsed() >= Duration::from_millis(300) && t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(sql.lock(&a).try_acquire().await.unwrap().is_some(), "the SQLite half was kept after the timeout");
    // Free: both are taken together, and each store sees its half held.
    let waiting = tokio::spawn({
        let m = both();
        async move { m.acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    blocker.release().await.unwrap();
    let g = bounded("multi-lock after the release", Duration::from_secs(5), waiting).await.unwrap().unwrap();
    assert_eq!(g.tokens().len(), 2);
    assert!(sql.lock(&a).try_acquire().await.unwrap().is_none());
    assert!(rl.lock(&b).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
    assert!(rl.lock(&b).try_acquire().await.unwrap().is_some());
}

/// The canonical order is the store's and the stored name's, whatever options each
/// client's URL carries: multi-locks over the same two names, given in opposite orders
/// through clients whose URLs differ only in options, never deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn multi_lock_order_ignores_url_options() {
    baton_testkit::needs_server!("BATON_TEST_REDLOCK_URL");
    let (x, y) = (unique("rl-order-x"), unique("rl-order-y"));
    let plain = Client::connect(&server()).await.unwrap();
    let other = Client::connect(&with_option(&server(), "lease=20s&retry_count=5")).await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..4 {
        let (p, o, x, y) = (plain.clone(), other.clone(), x.clone(), y.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                // Crosswise: ordered by URL string first, these would take x then y and
                // y then x.
                let m = if t % 2 == 0 {
                    baton::MultiLock::new([p.lock(&x), o.lock(&y)])
                } else {
                    baton::MultiLock::new([p.lock(&y), o.lock(&x)])
                };
                let g = m.acquire().await.unwrap();
                tokio::task::yield_now().await;
                g.release().await.unwrap();
            }
        }));
    }
    bounded("crosswise multi-locks finish (no deadlock)", Duration::from_secs(60), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
}
