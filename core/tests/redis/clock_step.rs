//! A Redis server's wall clock stepped forward (an NTP step, a resumed VM) while a lock is
//! held: redis-server processes of the test's own under libfaketime
//! (`OwnRedis::start_faketime`), never the shared servers of `scripts/services`. Redis
//! expires keys by its own clock, so a step ends every lease on that server at once. Shown
//! per scheme: on one server a second client is granted while the first still believes it
//! holds (the documented weakness), but with a larger token, so the first one's fenced
//! write is refused, and the first learns of the loss at its next extend; on Redlock a
//! minority of stepped nodes never gives a second grant, a majority does (larger token,
//! the late write refused).
#![cfg(all(feature = "redis", feature = "redlock"))]

use std::time::Duration;

use baton::{Client, ErrorKind, LockGuard, LockOptions};
use baton_testkit::behaviour::{bounded, eventually, unique};
use baton_testkit::{FakeClock, OwnRedis, TestServers, faketime_lib, redlock_url, tools_present};

/// Generous bound for one call on a loaded 2-core CI machine (calls take milliseconds).
const CALL: Duration = Duration::from_secs(10);
/// The step: far past the 20 s lease.
const STEP: i64 = 60;

fn present() -> bool {
    tools_present(&["redis-server", "cc"]) && faketime_lib().is_some()
}

/// The lease A holds with: explicit (no watchdog), long enough that A's own local end does
/// not pass during the test, so A still believes it holds after the step.
fn lease() -> LockOptions {
    LockOptions::new().ttl(Duration::from_secs(20))
}

/// The server's `TIME`, in µs.
fn server_time_us(server: &OwnRedis) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(&mut server.admin()).unwrap();
    s * 1_000_000 + us
}

/// Steps the server's clock `STEP` s forward and waits until its `TIME` shows it.
async fn step(server: &OwnRedis, clock: &FakeClock) {
    let before = server_time_us(server);
    clock.step(STEP).unwrap();
    // Seen at the server's next clock call (FAKETIME_NO_CACHE); 10 s bounds a slow machine.
    eventually("the server's clock stepped", CALL, || async {
        server_time_us(server) >= before + (STEP - 1) * 1_000_000
    })
    .await;
}

async fn try_acquire(c: &Client, name: &str) -> Option<LockGuard> {
    bounded("try_acquire", CALL, c.lock(name).try_acquire()).await.unwrap()
}

/// B was granted while A still believes it holds. B's token is larger, so the fence store
/// refuses A's late write after B's; A learns of the loss at its next call to the store
/// (`extend`), and its release says so too.
async fn overlap_ends_at_a(fence: &Client, ga: LockGuard, gb: LockGuard, key: &str) {
    assert!(!ga.is_lost(), "A still believes it holds (its lease runs on its own clock)");
    assert!(gb.token() > ga.token(), "B's token {} must be above A's {}", gb.token(), ga.token());
    assert!(fence.fence().write(key, "b", gb.token()).await.unwrap(), "B writes with its token");
    assert!(!fence.fence().write(key, "a late", ga.token()).await.unwrap(), "A's stale token is refused");
    let got = fence.fence().read(key).await.unwrap().unwrap();
    assert_eq!((got.value.as_str(), got.token), ("b", gb.token()));

    let e = bounded("A extends", CALL, ga.extend(Duration::from_secs(20))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert!(ga.is_lost());
    assert_eq!(bounded("A releases", CALL, ga.release()).await.unwrap_err().kind(), ErrorKind::LockLost);
    bounded("B releases", CALL, gb.release()).await.unwrap();
}

/// One server, `query` the URL's options: A holds for 20 s; the server's clock steps 60 s;
/// A's key is gone at once and B is granted while A still believes it holds.
async fn single_server_step(query: &str) {
    let (server, clock) = OwnRedis::start_faketime();
    let url = format!("redis://127.0.0.1:{}{query}", server.port);
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let (name, key) = (unique("clock-step"), unique("clock-step-value"));
    let ga = bounded("A acquires", CALL, a.lock_with(&name, lease()).acquire()).await.unwrap();
    assert!(a.fence().write(&key, "a", ga.token()).await.unwrap(), "A writes while it holds");
    assert!(try_acquire(&b, &name).await.is_none(), "{url}: held before the step");

    step(&server, &clock).await;
    let gb = try_acquire(&b, &name).await.expect("the step expired A's key on the server: B is granted");
    // The token rule, max(counter + 1, server TIME in µs): a clock stepped forward only
    // makes the next token larger.
    overlap_ends_at_a(&a, ga, gb, &key).await;
}

/// Baton's default (Redisson) layout on one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_layout_one_server_stepped() {
    if present() {
        single_server_step("").await;
    }
}

/// `?scheme=simple` (SET NX PX) on one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_scheme_one_server_stepped() {
    if present() {
        single_server_step("?scheme=simple").await;
    }
}

/// Five nodes, every one under libfaketime (stepped or not as the test says), and the
/// `redlock://` URL over them (`redlock_url`, as `redlock_faults.rs`).
fn five() -> (Vec<(OwnRedis, FakeClock)>, String) {
    let nodes: Vec<(OwnRedis, FakeClock)> = (0..5).map(|_| OwnRedis::start_faketime()).collect();
    let url = redlock_url(nodes.iter().map(|(n, _)| n));
    (nodes, url)
}

/// Waits until every node holds `name`: acquire returns once a quorum granted, the other
/// nodes' answers land a moment later (10 s bounds a loaded machine).
async fn held_on_all(nodes: &[(OwnRedis, FakeClock)], name: &str) {
    eventually("the grant on all five nodes", CALL, || async { nodes.iter().all(|(n, _)| n.exists(name)) }).await;
}

/// One node's clock steps: its key is gone, but one free node is no quorum. B is refused;
/// A extends on the four others and releases; then B is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_one_node_stepped_never_grants_twice() {
    if !present() {
        return;
    }
    let (nodes, url) = five();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("rl-clock-step");
    let ga = bounded("A acquires", CALL, a.lock_with(&name, lease()).acquire()).await.unwrap();
    held_on_all(&nodes, &name).await;
    step(&nodes[0].0, &nodes[0].1).await;
    assert!(!nodes[0].0.exists(&name), "the stepped node expired A's key");
    assert!(nodes[1..].iter().all(|(n, _)| n.exists(&name)), "the others still hold it");

    assert!(try_acquire(&b, &name).await.is_none(), "one free node is no quorum: no second grant");
    bounded("A extends", CALL, ga.extend(Duration::from_secs(20))).await.expect("A extends on the quorum of 4");
    assert!(!ga.is_lost());
    bounded("A releases", CALL, ga.release()).await.unwrap();
    let gb = try_acquire(&b, &name).await.expect("released: B is granted");
    gb.release().await.unwrap();
}

/// Three nodes' clocks step: their keys are gone and B is granted on them while A holds
/// (a majority of wrong clocks breaks Redlock), but with a larger token (the largest node
/// answer: TIME in µs on the stepped nodes), so A's fenced write is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_majority_stepped_grants_twice_with_a_larger_token() {
    if !present() {
        return;
    }
    let (nodes, url) = five();
    // The resource: a server of its own, fenced writes on it (redlock:// has none).
    let resource = OwnRedis::start_blocking();
    let fence = Client::connect(&format!("redis://127.0.0.1:{}", resource.port)).await.unwrap();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let (name, key) = (unique("rl-clock-step3"), unique("rl-clock-step3-value"));
    let ga = bounded("A acquires", CALL, a.lock_with(&name, lease()).acquire()).await.unwrap();
    assert!(fence.fence().write(&key, "a", ga.token()).await.unwrap());
    held_on_all(&nodes, &name).await;
    for (n, clock) in &nodes[..3] {
        step(n, clock).await;
    }

    let gb = try_acquire(&b, &name).await.expect("three free nodes are a quorum: B is granted while A holds");
    // A's extend then finds its key on two nodes only.
    overlap_ends_at_a(&fence, ga, gb, &key).await;
}
