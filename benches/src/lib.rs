//! What the criterion benches share: the store URL from the environment, a runtime, the
//! two lock loops the investigations compare against a store's own round trips, and a
//! criterion measurement in store round trips instead of time.
//!
//! Benches are not tests: without their `BATON_TEST_*_URL` they print why and measure
//! nothing.

mod trips;

use std::time::{Duration, Instant};

use baton::{Client, Lock};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

pub use trips::RoundTrips;

/// How long a hand-off's holder lets its waiter park in the store's wait before
/// releasing, as `baton bench` does (over etcd's JSON gateway a waiter's first attempt,
/// watch and read take ~3–5 ms; a release within them would time the waiter's start).
pub const SETTLE: Duration = Duration::from_millis(10);

/// The store URL in `$var`, or `None` after printing that the bench is skipped.
pub fn store_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            println!("{var} unset: skipping (`scripts/services start`, then source its services.env)");
            None
        }
    }
}

/// The multi-thread runtime every bench drives baton on (`baton bench`'s default).
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime")
}

/// A client of `url`, on `rt`; a bench cannot go on without one.
pub fn connect(rt: &Runtime, url: &str) -> Client {
    rt.block_on(Client::connect(url)).unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"))
}

/// `iters` acquire + release of `lock` in a row, timed as a whole.
pub async fn acquire_release(lock: &Lock, iters: u64) -> Duration {
    let started = Instant::now();
    for _ in 0..iters {
        lock.acquire().await.expect("acquire").release().await.expect("release");
    }
    started.elapsed()
}

/// `iters` hand-offs of `name` between two handles: each time a waiter starts acquiring,
/// the holder lets it park (`SETTLE`) and releases; the sum of the times from the release
/// call to the waiter's grant.
pub async fn handoff(client: &Client, name: &str, iters: u64) -> Duration {
    let (mut holder, mut waiter) = (client.lock(name), client.lock(name));
    let mut held = holder.acquire().await.expect("acquire");
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let (ready_tx, ready_rx) = oneshot::channel();
        let next = waiter.clone();
        let task = tokio::spawn(async move {
            let _ = ready_tx.send(());
            let granted = next.acquire().await;
            (granted, Instant::now())
        });
        let _ = ready_rx.await;
        tokio::time::sleep(SETTLE).await;
        let released_at = Instant::now();
        held.release().await.expect("release");
        let (granted, granted_at) = task.await.expect("the waiter task");
        held = granted.expect("the waiter's acquire");
        total += granted_at.saturating_duration_since(released_at);
        std::mem::swap(&mut holder, &mut waiter);
    }
    held.release().await.expect("release");
    total
}

/// `iters` rounds of the store's own operations (`Client::yardsticks` on `name`), each
/// after `pause` when given: the summed time of the operation at `op` in each round, or of
/// the whole round when `op` is `None`.
pub async fn yardsticks(
    client: &Client,
    name: &str,
    op: Option<usize>,
    pause: Option<Duration>,
    iters: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        if let Some(p) = pause {
            tokio::time::sleep(p).await;
        }
        let ops = client.yardsticks(name).await.expect("the store's yardsticks");
        total += match op {
            Some(i) => ops.get(i).map_or(Duration::ZERO, |(_, d)| *d),
            None => ops.iter().map(|(_, d)| *d).sum(),
        };
    }
    total
}

/// The group a store's yardsticks are read against, on the store of `$var`: baton's
/// `acquire_release` against `store_round` (the store's own requests for one uncontended
/// cycle, as `Client::yardsticks` times them with the same client), and `handoff`
/// against `store_first` (the first of those requests) and `store_first_paused` (that
/// request after the hand-off's pause: a store's first request after a quiet spell is
/// slower than in a busy loop, its threads and the CPUs having gone idle).
pub fn yardstick_group(c: &mut criterion::Criterion, var: &str, group: &str) {
    if let Some(url) = store_url(var) {
        yardstick_group_at(c, &url, group);
    }
}

/// [`yardstick_group`] on the store at `url`.
pub fn yardstick_group_at(c: &mut criterion::Criterion, url: &str, group: &str) {
    const NAME: &str = "bench/yardstick";
    let rt = runtime();
    let client = connect(&rt, url);
    let mut g = c.benchmark_group(group);
    g.sample_size(20);
    let lock = client.lock(&format!("bench/{group}/uncontended"));
    g.bench_function("acquire_release", |b| b.iter_custom(|n| rt.block_on(acquire_release(&lock, n))));
    let (rt, client) = (&rt, &client);
    let yard = |op, pause| move |n| rt.block_on(yardsticks(client, NAME, op, pause, n));
    g.bench_function("store_round", |b| b.iter_custom(yard(None, None)));
    g.bench_function("store_first", |b| b.iter_custom(yard(Some(0), None)));
    let handoff_name = format!("bench/{group}/handoff");
    g.bench_function("handoff", |b| b.iter_custom(|n| rt.block_on(handoff(client, &handoff_name, n))));
    g.bench_function("store_first_paused", |b| b.iter_custom(yard(Some(0), Some(SETTLE))));
    g.finish();
    rt.block_on(client.close());
}
