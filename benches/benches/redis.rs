//! Redis (`$BATON_TEST_REDIS_URL`): the uncontended acquire + release and the hand-off in
//! time, then what they and the watchdog cost in store round trips (requests on the
//! client's command connection, a pipeline counting one).

use std::time::Duration;

use baton::{Client, LockGuard, LockOptions};
use baton_benches::{RoundTrips, acquire_release, connect, handoff, runtime, store_url};
use criterion::{Criterion, SamplingMode};
use tokio::runtime::Runtime;

/// Watchdog locks held while the renewals' round trips are counted.
const HELD: u64 = 10_000;
/// Tasks that take (and release) them at once.
const TASKS: u64 = 64;
/// A short lease and renewal period, so that a sample of a few periods stays short: the
/// round trips per period do not depend on the period's length.
const LEASE: Duration = Duration::from_millis(900);
const PERIOD: Duration = Duration::from_millis(300);

fn main() {
    let Some(url) = store_url("BATON_TEST_REDIS_URL") else { return };
    let rt = runtime();
    let client = connect(&rt, &url);
    let mut c = Criterion::default().configure_from_args();
    timed(&mut c, &rt, &client);
    c.final_summary();
    let Some(trips) = RoundTrips::of(&client) else {
        println!("{url}: the store does not count its round trips: skipping them");
        return;
    };
    let mut c = Criterion::default().with_measurement(trips).configure_from_args();
    counted(&mut c, &rt, &client);
    c.final_summary();
    rt.block_on(client.close());
}

fn timed(c: &mut Criterion, rt: &Runtime, client: &Client) {
    let mut g = c.benchmark_group("redis");
    let lock = client.lock("bench/redis/uncontended");
    g.bench_function("acquire_release", |b| b.iter_custom(|n| rt.block_on(acquire_release(&lock, n))));
    // Each hand-off waits `SETTLE` first: fewer samples keep a run short.
    g.sample_size(20);
    g.bench_function("handoff", |b| b.iter_custom(|n| rt.block_on(handoff(client, "bench/redis/handoff", n))));
    g.finish();
}

fn counted(c: &mut Criterion<RoundTrips>, rt: &Runtime, client: &Client) {
    let mut g = c.benchmark_group("redis_round_trips");
    let lock = client.lock("bench/redis/uncontended");
    g.bench_function("acquire_release", |b| b.iter(|| rt.block_on(acquire_release(&lock, 1))));
    // One iteration is one renewal period with `HELD` watchdog locks held and nothing else
    // on the client: every round trip counted is a renewal's.
    let guards = rt.block_on(hold(client));
    g.sampling_mode(SamplingMode::Flat).sample_size(10);
    g.bench_function(format!("watchdog_period_{HELD}_held"), |b| {
        b.iter(|| rt.block_on(async { tokio::time::sleep(PERIOD).await }))
    });
    g.finish();
    let lost = guards.iter().filter(|g| g.is_lost()).count();
    if lost > 0 {
        println!("watchdog: {lost} of {HELD} leases were lost during the bench");
    }
    rt.block_on(release(guards));
}

/// `HELD` watchdog locks, taken by `TASKS` tasks at once.
async fn hold(client: &Client) -> Vec<LockGuard> {
    let opts = LockOptions::new().lease(LEASE).renew_every(PERIOD);
    let per_task = HELD.div_ceil(TASKS);
    let mut joins = tokio::task::JoinSet::new();
    for t in 0..TASKS {
        let (client, opts) = (client.clone(), opts.clone());
        joins.spawn(async move {
            let mut guards = Vec::new();
            for i in (t * per_task)..((t + 1) * per_task).min(HELD) {
                guards.push(client.lock_with(&format!("bench/redis/watchdog/{i}"), opts.clone()).acquire().await?);
            }
            Ok::<_, baton::Error>(guards)
        });
    }
    let mut guards = Vec::new();
    while let Some(done) = joins.join_next().await {
        guards.extend(done.expect("a bench task").expect("acquire"));
    }
    guards
}

/// Releases `guards` from `TASKS` tasks at once, as they were taken.
async fn release(mut guards: Vec<LockGuard>) {
    let chunk = guards.len().div_ceil(TASKS as usize).max(1);
    let mut joins = tokio::task::JoinSet::new();
    while !guards.is_empty() {
        let part = guards.split_off(guards.len().saturating_sub(chunk));
        joins.spawn(async move {
            for g in part {
                let _ = g.release().await;
            }
        });
    }
    while joins.join_next().await.is_some() {}
}
