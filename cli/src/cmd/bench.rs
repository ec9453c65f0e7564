//! `baton bench`: acquire/release throughput and latency on a store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use baton::{Client, Lock, LockGuard};
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::sync::oneshot;

use crate::exit::{self, Failure};
use crate::output::{self, Table, human};
use crate::url::StoreChoice;

/// Tasks of the concurrent uncontended scenario.
const MANY: usize = 64;
/// How long a hand-off holder waits after its waiter has started acquiring, so that the
/// waiter is parked in the store's wait (not still starting) when the release happens.
const SETTLE: Duration = Duration::from_millis(1);

/// Measure acquire/release throughput and latency, uncontended and contended
///
/// Three scenarios, each bounded by --iterations and --duration, whichever ends first:
///   uncontended, 1 task:   acquire + release of one name in a loop
///   uncontended, 64 tasks: the same, 64 tasks at once, each on its own name
///   hand-off:              two handles contend on one name; latency from the holder's
///                          release call to the waiter's grant
/// and, on stores that have them (etcd), the store's own round trips with the same
/// client as yardsticks (etcd: one txn; one txn + one delete), with the p50 ratios.
/// Uses lock names under `bench/` on the store.
#[derive(clap::Args, Debug)]
#[command(after_help = exit::HELP)]
pub(crate) struct Args {
    /// Most operations per scenario.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    iterations: u64,
    /// Longest time per scenario.
    #[arg(long, value_name = "DURATION", default_value = "3s", allow_hyphen_values = true)]
    duration: String,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    url: String,
    iterations: u64,
    duration_ms: f64,
    scenarios: Vec<Scenario>,
}

#[derive(Serialize)]
struct Scenario {
    /// `uncontended_1`, `uncontended_64`, `handoff`, `store_first` or `store_round`.
    name: &'static str,
    description: &'static str,
    tasks: usize,
    ops: u64,
    elapsed_ms: f64,
    ops_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
}

pub(crate) async fn run(args: Args, store: StoreChoice, verbose: bool) -> Result<u8, Failure> {
    let limit = exit::duration("--duration", &args.duration)?;
    store.announce(true, verbose);
    let client = Client::connect(&store.url).await?;
    let out = scenarios(&client, args.iterations, limit, !args.json).await;
    let url = client.url();
    client.close().await;
    let scenarios = out?;
    let report = Report { url, iterations: args.iterations, duration_ms: output::millis(limit), scenarios };
    if args.json {
        output::print_json(&report)?;
    } else {
        print!("{}", render(&report));
    }
    Ok(0)
}

async fn scenarios(client: &Client, max: u64, limit: Duration, progress: bool) -> Result<Vec<Scenario>, Failure> {
    let note = |what: &str| {
        if progress {
            eprintln!("baton: bench: {what}…");
        }
    };
    note("uncontended, 1 task");
    let one = uncontended(client, 1, max, limit).await?;
    note("uncontended, 64 tasks");
    let many = uncontended(client, MANY, max, limit).await?;
    note("contended hand-off");
    let handoff = handoff(client, max, limit).await?;
    let mut out = vec![
        scenario("uncontended_1", "acquire+release, 1 task", 1, one),
        scenario("uncontended_64", "acquire+release, 64 tasks, a name each", MANY, many),
        scenario("handoff", "release -> waiter granted, 2 handles on one name", 2, handoff),
    ];
    if !client.yardsticks("bench/yardstick").await?.is_empty() {
        note("the store's own round trips");
        let (first, both) = yardsticks(client, max, limit).await?;
        out.push(scenario("store_first", "store yardstick: its first op (etcd: 1 txn)", 1, first));
        out.push(scenario("store_round", "store yardstick: a whole round (etcd: txn + delete)", 1, both));
    }
    Ok(out)
}

/// The store's own operations that the speed targets are measured against (the client's
/// `yardsticks`), in a loop: the first operation alone, and the whole round.
async fn yardsticks(client: &Client, max: u64, limit: Duration) -> Result<(Sample, Sample), Failure> {
    let (mut first, mut both) = (histogram(), histogram());
    let started = Instant::now();
    while first.len() < max && started.elapsed() < limit {
        let ops = client.yardsticks("bench/yardstick").await?;
        let Some((_, d)) = ops.first() else { break };
        first.saturating_record(nanos(*d));
        both.saturating_record(nanos(ops.iter().map(|(_, d)| *d).sum()));
    }
    let elapsed = started.elapsed();
    Ok((Sample { ops: first.len(), elapsed, hist: first }, Sample { ops: both.len(), elapsed, hist: both }))
}

/// The speed targets as ratios of p50s, when the store has yardsticks: uncontended
/// acquire+release over a whole round of the store's own, hand-off over its first op.
fn ratios(r: &Report) -> Option<String> {
    let p50 = |name: &str| r.scenarios.iter().find(|s| s.name == name).map(|s| s.p50_us);
    let (one, handoff, first, round) =
        (p50("uncontended_1")?, p50("handoff")?, p50("store_first")?, p50("store_round")?);
    Some(format!(
        "p50 ratios: acquire+release / store round = {:.2}; hand-off / store first op = {:.2}\n",
        one / round,
        handoff / first
    ))
}

/// What a scenario measured: operation count, wall time, per-operation latency (ns).
struct Sample {
    ops: u64,
    elapsed: Duration,
    hist: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    // 1 ns .. 1 h at 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static histogram bounds are valid")
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `tasks` tasks, each acquiring and releasing its own name until `max` operations in
/// all or `limit` time.
async fn uncontended(client: &Client, tasks: usize, max: u64, limit: Duration) -> Result<Sample, Failure> {
    let locks: Vec<Lock> = (0..tasks).map(|i| client.lock(&format!("bench/uncontended-{tasks}/{i}"))).collect();
    // One warm-up round per name: creates store rows and connections outside the timing.
    for l in &locks {
        l.acquire().await?.release().await?;
    }
    let claimed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + limit;
    let mut joins = tokio::task::JoinSet::new();
    for lock in locks {
        let claimed = claimed.clone();
        joins.spawn(async move {
            let mut hist = histogram();
            while Instant::now() < deadline && claimed.fetch_add(1, Ordering::Relaxed) < max {
                let t = Instant::now();
                lock.acquire().await?.release().await?;
                hist.saturating_record(nanos(t.elapsed()));
            }
            Ok::<_, baton::Error>(hist)
        });
    }
    let mut hist = histogram();
    while let Some(done) = joins.join_next().await {
        let h = done.map_err(|e| Failure::new(exit::SOFTWARE, format!("a bench task failed: {e}")))??;
        hist.add(&h).map_err(|e| Failure::new(exit::SOFTWARE, format!("histogram: {e}")))?;
    }
    Ok(Sample { ops: hist.len(), elapsed: started.elapsed(), hist })
}

/// Two handles pass one lock back and forth. Each round: a waiter task starts acquiring,
/// the holder lets it park, stamps the time and releases; the waiter stamps its grant.
async fn handoff(client: &Client, max: u64, limit: Duration) -> Result<Sample, Failure> {
    let mut holder_lock = client.lock("bench/handoff");
    let mut waiter_lock = client.lock("bench/handoff");
    let mut held: LockGuard = holder_lock.acquire().await?;
    let mut hist = histogram();
    let started = Instant::now();
    while hist.len() < max && started.elapsed() < limit {
        let (ready_tx, ready_rx) = oneshot::channel();
        let waiter = waiter_lock.clone();
        let task = tokio::spawn(async move {
            let _ = ready_tx.send(());
            let g = waiter.acquire().await;
            (g, Instant::now())
        });
        let _ = ready_rx.await;
        tokio::time::sleep(SETTLE).await;
        let released_at = Instant::now();
        held.release().await?;
        let (granted, granted_at) =
            task.await.map_err(|e| Failure::new(exit::SOFTWARE, format!("a bench task failed: {e}")))?;
        held = granted?;
        hist.saturating_record(nanos(granted_at.saturating_duration_since(released_at)));
        // The waiter now holds: the roles swap.
        std::mem::swap(&mut holder_lock, &mut waiter_lock);
    }
    let elapsed = started.elapsed();
    held.release().await?;
    Ok(Sample { ops: hist.len(), elapsed, hist })
}

fn scenario(name: &'static str, description: &'static str, tasks: usize, s: Sample) -> Scenario {
    let us = |ns: u64| (ns as f64 / 10.0).round() / 100.0;
    let secs = s.elapsed.as_secs_f64();
    Scenario {
        name,
        description,
        tasks,
        ops: s.ops,
        elapsed_ms: output::millis(s.elapsed),
        ops_per_sec: if secs > 0.0 { (s.ops as f64 / secs).round() } else { 0.0 },
        p50_us: us(s.hist.value_at_quantile(0.5)),
        p99_us: us(s.hist.value_at_quantile(0.99)),
        max_us: us(s.hist.max()),
    }
}

fn render(r: &Report) -> String {
    let mut t = Table::new(["scenario", "tasks", "ops", "ops/s", "p50", "p99", "max"]);
    let d = |us: f64| human(Duration::from_secs_f64(us / 1e6));
    for s in &r.scenarios {
        // Hand-offs are paced by the settle pause, so their rate says nothing.
        let rate = if s.name == "handoff" { "-".to_owned() } else { format!("{:.0}", s.ops_per_sec) };
        t.row(vec![
            s.description.to_owned(),
            s.tasks.to_string(),
            s.ops.to_string(),
            rate,
            d(s.p50_us),
            d(s.p99_us),
            d(s.max_us),
        ]);
    }
    format!(
        "baton bench on {} (at most {} ops or {} per scenario)\n{}{}",
        r.url,
        r.iterations,
        human(Duration::from_secs_f64(r.duration_ms / 1e3)),
        t.render("  "),
        ratios(r).unwrap_or_default()
    )
}
