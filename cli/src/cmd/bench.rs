//! `baton bench`: acquire/release throughput and latency on a store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use baton::{Client, Lock, LockGuard, LockOptions};
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::sync::oneshot;

use crate::exit::{self, Failure};
use crate::output::{self, Table, human};
use crate::url::StoreChoice;

/// Tasks of the concurrent uncontended scenario.
const MANY: usize = 64;
/// The watchdog scenario's lease and renewal period: short, so that a few periods fit in
/// a bench run (the round trips per period do not depend on the period's length).
const WATCHDOG_LEASE: Duration = Duration::from_secs(3);
const WATCHDOG_PERIOD: Duration = Duration::from_secs(1);
/// Periods the watchdog scenario counts round trips over (after one to settle).
const WATCHDOG_PERIODS: u32 = 4;
/// How long a hand-off holder waits after its waiter has started acquiring, so that the
/// waiter is parked in the store's wait (not still starting) when the release happens:
/// over etcd's JSON gateway a waiter's first attempt, its watch request and its read take
/// ~3–5 ms, and a release within them measured the waiter's start, not the hand-off.
const SETTLE: Duration = Duration::from_millis(10);

/// Measure acquire/release throughput and latency, uncontended and contended
///
/// Scenarios, each bounded by --iterations and --duration, whichever ends first:
///   uncontended, 1 task:   acquire + release of one name in a loop
///   uncontended, 64 tasks: the same, 64 tasks at once, each on its own name
///   hand-off:              two handles contend on one name; latency from the holder's
///                          release call to the waiter's grant
///   watchdog:              --held watchdog locks held at once (3 s lease renewed every
///                          1 s); counts the store round trips the renewals take per period,
///                          on stores that count them (Redis)
/// On redlock://, one more: acquire + release on Redlock and on its first node alone
/// (redis://, default options), alternating one by one, and the ratio of their p50s;
/// and the machine's fan-out floor, which no Redlock round can beat: acquire + release on
/// every node alone (redis://) at once until a quorum of them finished, and PING on the
/// first node against PING on every node until a quorum answered.
/// And, on stores that have them (etcd), the store's own round trips with the same
/// client as yardsticks (etcd: one txn; one txn + one delete; one txn after the same
/// pause as the hand-off's release), with the p50 ratios.
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
    /// Watchdog locks the renewal scenario holds at once (0: skip it).
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    held: u64,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
    /// The async runtime the scenarios run on: `multi-thread` (a worker per core, or
    /// `--workers`) or `current-thread` (the caller, the store's sockets and baton's
    /// background tasks on one thread: no hand-over between threads, as for a binding that
    /// drives I/O from its host's thread).
    #[arg(long, value_enum, default_value_t = BenchRuntime::MultiThread)]
    pub(crate) runtime: BenchRuntime,
    /// Worker threads of the multi-thread runtime (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) workers: Option<u16>,
}

/// `baton bench --runtime`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum BenchRuntime {
    MultiThread,
    CurrentThread,
}

impl Args {
    /// The runtime `--runtime` and `--workers` ask for, to build.
    pub(crate) fn runtime(&self) -> Result<tokio::runtime::Builder, Failure> {
        let mut b = match (self.runtime, self.workers) {
            (BenchRuntime::CurrentThread, Some(_)) => {
                return Err(Failure::new(exit::USAGE, "--workers needs --runtime multi-thread"));
            }
            (BenchRuntime::CurrentThread, None) => tokio::runtime::Builder::new_current_thread(),
            (BenchRuntime::MultiThread, _) => tokio::runtime::Builder::new_multi_thread(),
        };
        if let Some(n) = self.workers {
            b.worker_threads(usize::from(n));
        }
        Ok(b)
    }
}

#[derive(Serialize)]
struct Report {
    url: String,
    runtime: BenchRuntime,
    /// Worker threads of the multi-thread runtime (`None`: one per core, or current-thread).
    #[serde(skip_serializing_if = "Option::is_none")]
    workers: Option<u16>,
    iterations: u64,
    duration_ms: f64,
    scenarios: Vec<Scenario>,
    /// The watchdog scenario, on stores that count round trips.
    #[serde(skip_serializing_if = "Option::is_none")]
    watchdog: Option<Watchdog>,
}

#[derive(Serialize)]
struct Watchdog {
    held: u64,
    period_ms: f64,
    periods: u32,
    /// Store round trips while the locks were only being renewed.
    round_trips: u64,
    round_trips_per_period: f64,
    /// Leases found lost at the end (0 when every renewal went through).
    lost: u64,
}

#[derive(Serialize)]
struct Scenario {
    /// `uncontended_1`, `uncontended_64`, `handoff`; on Redlock also `redlock_paired`,
    /// `single_node_paired`, `quorum_of_nodes`, `node_ping` and `quorum_ping`; on stores with
    /// yardsticks `store_first`, `store_round` and `store_first_paused`.
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
    let mut out = scenarios(&client, args.iterations, limit, !args.json).await;
    if let (Ok(list), Some(urls)) = (&mut out, node_urls(&store.url)?) {
        if !args.json {
            eprintln!("baton: bench: redlock vs its first node alone…");
        }
        let mut nodes = Vec::with_capacity(urls.len());
        for u in &urls {
            nodes.push(Client::connect(u).await?);
        }
        let paired = paired(&client, &nodes[0], args.iterations, limit).await;
        if !args.json {
            eprintln!("baton: bench: the fan-out floor…");
        }
        let floor = match paired {
            Ok(_) => fan_out(&nodes, args.iterations, limit).await,
            Err(_) => Err(Failure::new(exit::SOFTWARE, "skipped")),
        };
        for n in nodes {
            n.close().await;
        }
        let (rl, one) = paired?;
        list.push(scenario("redlock_paired", "redlock acquire+release, 1 task (paired)", 1, rl));
        list.push(scenario("single_node_paired", "first node alone, same loop (paired)", 1, one));
        list.push(scenario("quorum_of_nodes", "fan-out floor: every node alone at once, a quorum done", 1, floor?));
        let (mut pings, _) = yardsticks(&client, args.iterations, limit, None).await?;
        if let (Some(quorum), Some(one)) = (pings.pop(), pings.pop()) {
            list.push(scenario("node_ping", "fan-out floor: PING the first node", 1, one));
            list.push(scenario("quorum_ping", "fan-out floor: PING all, until a quorum answered", 1, quorum));
        }
    }
    let counted = out.is_ok() && args.held > 0 && client.store_round_trips().is_some();
    if counted && !args.json {
        eprintln!("baton: bench: watchdog, {} locks held…", args.held);
    }
    let watchdog = if counted { watchdog(&client, args.held).await.map(Some) } else { Ok(None) };
    let url = client.url();
    client.close().await;
    let scenarios = out?;
    let watchdog = watchdog?;
    let report = Report {
        url,
        runtime: args.runtime,
        workers: args.workers,
        iterations: args.iterations,
        duration_ms: output::millis(limit),
        scenarios,
        watchdog,
    };
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
    // etcd's: one txn, then one delete (Redlock's, PINGs, come with its paired scenario).
    if client.yardsticks("bench/yardstick").await?.first().is_some_and(|(op, _)| *op == "txn") {
        note("the store's own round trips");
        let (mut ops, both) = yardsticks(client, max, limit, None).await?;
        let first = ops.swap_remove(0);
        // The hand-off's release comes after the waiter was let park (`SETTLE`), and a
        // store's first request after a quiet spell is slower than in a busy loop (its
        // threads and the CPUs have gone idle): the hand-off's yardstick sees the same pause.
        let (mut paused, _) = yardsticks(client, max, limit, Some(SETTLE)).await?;
        let first_paused = paused.swap_remove(0);
        out.push(scenario("store_first", "store yardstick: its first op (etcd: 1 txn)", 1, first));
        out.push(scenario("store_round", "store yardstick: a whole round (etcd: txn + delete)", 1, both));
        out.push(scenario(
            "store_first_paused",
            "store yardstick: its first op after the hand-off's pause",
            1,
            first_paused,
        ));
    }
    Ok(out)
}

/// The store's own operations that the speed targets are measured against (the client's
/// `yardsticks`), in a loop: each operation alone (in the store's order), and the whole
/// round; with `pause`, each round after that long a sleep.
async fn yardsticks(
    client: &Client,
    max: u64,
    limit: Duration,
    pause: Option<Duration>,
) -> Result<(Vec<Sample>, Sample), Failure> {
    let (mut each, mut both) = (Vec::new(), histogram());
    let started = Instant::now();
    while both.len() < max && started.elapsed() < limit {
        if let Some(p) = pause {
            tokio::time::sleep(p).await;
        }
        let ops = client.yardsticks("bench/yardstick").await?;
        if ops.is_empty() {
            break;
        }
        each.resize_with(ops.len(), histogram);
        for ((_, d), hist) in ops.iter().zip(&mut each) {
            hist.saturating_record(nanos(*d));
        }
        both.saturating_record(nanos(ops.iter().map(|(_, d)| *d).sum()));
    }
    let elapsed = started.elapsed();
    let each = each.into_iter().map(|hist| Sample { ops: hist.len(), elapsed, hist }).collect();
    Ok((each, Sample { ops: both.len(), elapsed, hist: both }))
}

/// The speed targets as ratios of p50s: Redlock over its first node alone; on stores with
/// yardsticks, uncontended acquire+release over a whole round of the store's own and
/// hand-off over its first op (in a busy loop, and after the hand-off's pause).
fn ratios(r: &Report) -> String {
    let p50 = |name: &str| r.scenarios.iter().find(|s| s.name == name).map(|s| s.p50_us);
    let mut out = String::new();
    if let (Some(rl), Some(one)) = (p50("redlock_paired"), p50("single_node_paired")) {
        out.push_str(&format!("  redlock p50 / first node p50: x{:.2}\n", rl / one.max(f64::MIN_POSITIVE)));
    }
    if let (Some(quorum), Some(one)) = (p50("quorum_of_nodes"), p50("single_node_paired")) {
        out.push_str(&format!(
            "  fan-out floor, every node at once to a quorum p50 / first node p50: x{:.2}\n",
            quorum / one.max(f64::MIN_POSITIVE)
        ));
    }
    if let (Some(quorum), Some(one)) = (p50("quorum_ping"), p50("node_ping")) {
        out.push_str(&format!(
            "  fan-out floor, PING quorum p50 / PING first node p50: x{:.2}\n",
            quorum / one.max(f64::MIN_POSITIVE)
        ));
    }
    if let (Some(one), Some(handoff), Some(first), Some(round)) =
        (p50("uncontended_1"), p50("handoff"), p50("store_first"), p50("store_round"))
    {
        out.push_str(&format!(
            "p50 ratios: acquire+release / store round = {:.2}; hand-off / store first op = {:.2}\n",
            one / round,
            handoff / first
        ));
    }
    if let (Some(handoff), Some(paused)) = (p50("handoff"), p50("store_first_paused")) {
        out.push_str(&format!(
            "p50 ratio: hand-off / store first op after the same pause = {:.2}\n",
            handoff / paused.max(f64::MIN_POSITIVE)
        ));
    }
    out
}

/// On `redlock://h1,h2,…[/db]`: `redis://h1[/db]`, `redis://h2[/db]`, … with the same
/// credentials (no options: Redlock's are not the node's).
fn node_urls(url: &str) -> Result<Option<Vec<String>>, Failure> {
    let parsed = baton::StoreUrl::parse(url)?;
    if parsed.scheme() != "redlock" || parsed.host_list().is_empty() {
        return Ok(None);
    }
    let rest = url.split_once("://").map_or("", |(_, r)| r).split('?').next().unwrap_or("");
    let one = |h: &str| format!("redis://{}", rest.replacen(parsed.hosts(), h, 1));
    Ok(Some(parsed.host_list().into_iter().map(one).collect()))
}

/// The fan-out floor with the same scripts as Redlock, none of its logic: acquire +
/// release of one name on every node's own client at once, timed until a quorum of them
/// finished (the rest finish untimed, so this is a lower bound).
async fn fan_out(nodes: &[Client], max: u64, limit: Duration) -> Result<Sample, Failure> {
    let locks: Vec<Lock> = nodes.iter().map(|c| c.lock("bench/fan-out")).collect();
    let need = nodes.len() / 2 + 1;
    let mut hist = histogram();
    let started = Instant::now();
    while hist.len() < max && started.elapsed() < limit {
        let t = Instant::now();
        let mut each = tokio::task::JoinSet::new();
        for l in &locks {
            let l = l.clone();
            each.spawn(async move { l.acquire().await?.release().await });
        }
        let mut done = 0;
        while let Some(r) = each.join_next().await {
            r.map_err(|e| Failure::new(exit::SOFTWARE, format!("a bench task failed: {e}")))??;
            done += 1;
            if done == need {
                hist.saturating_record(nanos(t.elapsed()));
            }
        }
    }
    Ok(Sample { ops: hist.len(), elapsed: started.elapsed(), hist })
}

/// Acquire + release of one name on `a` and on `b` in turn, each timed on its own, until
/// `max` pairs or `limit`: both see the same machine load. Each starts once the other's
/// background steps ended (Redlock's late nodes), which are the other's cost, not load.
async fn paired(a: &Client, b: &Client, max: u64, limit: Duration) -> Result<(Sample, Sample), Failure> {
    let (la, lb) = (a.lock("bench/paired"), b.lock("bench/paired-single"));
    la.acquire().await?.release().await?;
    lb.acquire().await?.release().await?;
    let (mut ha, mut hb) = (histogram(), histogram());
    let started = Instant::now();
    while ha.len() < max && started.elapsed() < limit {
        for (lock, hist, client) in [(&la, &mut ha, a), (&lb, &mut hb, b)] {
            let t = Instant::now();
            lock.acquire().await?.release().await?;
            hist.saturating_record(nanos(t.elapsed()));
            client.settled().await;
        }
    }
    let elapsed = started.elapsed();
    Ok((Sample { ops: ha.len(), elapsed, hist: ha }, Sample { ops: hb.len(), elapsed, hist: hb }))
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

/// Holds `held` watchdog locks (taken by `MANY` tasks) and counts the store round trips
/// over `WATCHDOG_PERIODS` renewal periods, after one period for the renewals to settle
/// into batches. Nothing else runs on this client meanwhile, so every round trip counted
/// is the watchdog's.
async fn watchdog(client: &Client, held: u64) -> Result<Watchdog, Failure> {
    let opts = LockOptions::new().lease(WATCHDOG_LEASE).renew_every(WATCHDOG_PERIOD);
    let per_task = held.div_ceil(MANY as u64);
    let mut joins = tokio::task::JoinSet::new();
    for t in 0..MANY as u64 {
        let (client, opts) = (client.clone(), opts.clone());
        joins.spawn(async move {
            let mut guards = Vec::new();
            for i in (t * per_task)..((t + 1) * per_task).min(held) {
                guards.push(client.lock_with(&format!("bench/watchdog/{i}"), opts.clone()).acquire().await?);
            }
            Ok::<_, baton::Error>(guards)
        });
    }
    let mut guards = Vec::new();
    while let Some(done) = joins.join_next().await {
        guards.extend(done.map_err(|e| Failure::new(exit::SOFTWARE, format!("a bench task failed: {e}")))??);
    }
    tokio::time::sleep(WATCHDOG_PERIOD).await;
    let trips = || client.store_round_trips().unwrap_or(0);
    let before = trips();
    tokio::time::sleep(WATCHDOG_PERIOD * WATCHDOG_PERIODS).await;
    let round_trips = trips() - before;
    let lost = guards.iter().filter(|g| g.is_lost()).count() as u64;
    // Released by `MANY` tasks at once, as they were taken.
    let mut joins = tokio::task::JoinSet::new();
    while !guards.is_empty() {
        let chunk = guards.split_off(guards.len().saturating_sub(per_task.max(1) as usize));
        joins.spawn(async move {
            for g in chunk {
                let _ = g.release().await;
            }
        });
    }
    while joins.join_next().await.is_some() {}
    Ok(Watchdog {
        held,
        period_ms: output::millis(WATCHDOG_PERIOD),
        periods: WATCHDOG_PERIODS,
        round_trips,
        round_trips_per_period: round_trips as f64 / f64::from(WATCHDOG_PERIODS),
        lost,
    })
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
    let runtime = match (r.runtime, r.workers) {
        (BenchRuntime::CurrentThread, _) => "current-thread runtime".to_owned(),
        (BenchRuntime::MultiThread, None) => "multi-thread runtime".to_owned(),
        (BenchRuntime::MultiThread, Some(n)) => format!("multi-thread runtime, {n} workers"),
    };
    let mut out = format!(
        "baton bench on {} (at most {} ops or {} per scenario, {runtime})\n{}{}",
        r.url,
        r.iterations,
        human(Duration::from_secs_f64(r.duration_ms / 1e3)),
        t.render("  "),
        ratios(r)
    );
    if let Some(w) = &r.watchdog {
        out.push_str(&format!(
            "  watchdog: {} locks held, {} store round trips in {} renewal periods of {}: {:.1} per period, {} \
             leases lost\n",
            w.held,
            w.round_trips,
            w.periods,
            human(Duration::from_secs_f64(w.period_ms / 1e3)),
            w.round_trips_per_period,
            w.lost
        ));
    }
    out
}
