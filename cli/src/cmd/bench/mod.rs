//! `baton bench`: acquire/release throughput and latency on a store.
//!
//! Investigations of a store's internals (its own round trips, Redlock's fan-out floor,
//! renewal round trips) are criterion benches in the `baton-benches` crate.

mod scenarios;

use std::time::Duration;

use serde::Serialize;

use crate::exit::{self, Failure};
use crate::output::{self, Table, human};
use crate::url::StoreChoice;
use scenarios::Sample;

/// Tasks of the concurrent uncontended scenario.
const MANY: usize = 64;

/// Measure acquire/release throughput and latency, uncontended and contended
///
/// Scenarios, each bounded by --iterations and --duration, whichever ends first:
///   uncontended, 1 task:   acquire + release of one name in a loop
///   uncontended, 64 tasks: the same, 64 tasks at once, each on its own name
///   hand-off:              two handles contend on one name; latency from the holder's
///                          release call to the waiter's grant
///   contended, N tasks:    with --contended N: N tasks acquire + release one name, each
///                          acquire waiting its turn (latency includes the wait)
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
    /// The async runtime the scenarios run on: `multi-thread` (a worker per core, or
    /// `--workers`) or `current-thread` (the caller, the store's sockets and baton's
    /// background tasks on one thread: no hand-over between threads, as for a binding that
    /// drives I/O from its host's thread).
    #[arg(long, value_enum, default_value_t = BenchRuntime::MultiThread)]
    pub(crate) runtime: BenchRuntime,
    /// Worker threads of the multi-thread runtime (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) workers: Option<u16>,
    /// Also time N tasks contending on one name (e.g. 8: `?scheme=optimistic` under
    /// contention).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(2..=1024))]
    contended: Option<u16>,
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
}

#[derive(Serialize)]
struct Scenario {
    /// `uncontended_1`, `uncontended_64`, `handoff`, `contended` (with `--contended`).
    name: &'static str,
    description: &'static str,
    tasks: usize,
    ops: u64,
    elapsed_ms: f64,
    ops_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    /// The timed part's window on the wall clock, in seconds since the Unix epoch.
    t0_unix: f64,
    t1_unix: f64,
}

pub(crate) async fn run(args: Args, store: StoreChoice, verbose: bool) -> Result<u8, Failure> {
    let limit = exit::duration("--duration", &args.duration)?;
    store.announce(true, verbose);
    let client = baton::Client::connect(&store.url).await?;
    let out = measure(&client, args.iterations, limit, args.contended, !args.json).await;
    let url = client.url();
    client.close().await;
    let report = Report {
        url,
        runtime: args.runtime,
        workers: args.workers,
        iterations: args.iterations,
        duration_ms: output::millis(limit),
        scenarios: out?,
    };
    if args.json {
        output::print_json(&report)?;
    } else {
        crate::output::print(&render(&report));
    }
    Ok(0)
}

async fn measure(
    client: &baton::Client,
    max: u64,
    limit: Duration,
    contended: Option<u16>,
    progress: bool,
) -> Result<Vec<Scenario>, Failure> {
    let note = |what: &str| {
        if progress {
            crate::output::say!("baton: bench: {what}…");
        }
    };
    note("uncontended, 1 task");
    let one = scenarios::cycles(client, 1, false, max, limit).await?;
    note("uncontended, 64 tasks");
    let many = scenarios::cycles(client, MANY, false, max, limit).await?;
    note("contended hand-off");
    let handoff = scenarios::handoff(client, max, limit).await?;
    let mut out = vec![
        scenario("uncontended_1", "acquire+release, 1 task", 1, one),
        scenario("uncontended_64", "acquire+release, 64 tasks, a name each", MANY, many),
        scenario("handoff", "release -> waiter granted, 2 handles on one name", 2, handoff),
    ];
    if let Some(n) = contended.map(usize::from) {
        note(&format!("contended, {n} tasks on one name"));
        let s = scenarios::cycles(client, n, true, max, limit).await?;
        out.push(scenario("contended", "acquire+release, tasks on one name", n, s));
    }
    Ok(out)
}

fn scenario(name: &'static str, description: &'static str, tasks: usize, s: Sample) -> Scenario {
    let us = |ns: u64| (ns as f64 / 10.0).round() / 100.0;
    let secs = s.elapsed.as_secs_f64();
    let t0 = s.began.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
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
        t0_unix: t0,
        t1_unix: t0 + secs,
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
    format!(
        "baton bench on {} (at most {} ops or {} per scenario, {runtime})\n{}",
        r.url,
        r.iterations,
        human(Duration::from_secs_f64(r.duration_ms / 1e3)),
        t.render("  "),
    )
}
