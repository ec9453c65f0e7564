//! The `baton` binary, driven as real processes against real store files.
//!
//! Time bounds are generous (several times what a loaded 2-core machine needs) because
//! they only catch hangs; the properties themselves are checked on recorded data.

// The helpers beside the tests fail the test that calls them by panicking, as the tests do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn baton() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    // The caller's environment must not pick the store.
    c.env_remove("BATON_URL");
    c
}

fn sqlite_url(dir: &Path, file: &str) -> String {
    format!("sqlite://{}", dir.join(file).display())
}

/// Waits for `child` at most `limit`; kills it and fails the test on a hang.
fn wait_output(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!("{what} still running after {limit:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("wait_with_output")
}

fn run_to_end(cmd: &mut Command, limit: Duration, what: &str) -> Output {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn baton");
    wait_output(child, limit, what)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The JSON report `baton run --json` prints as its last stderr line.
fn run_report(out: &Output) -> Value {
    let err = stderr(out);
    let line = err.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON report in: {err}"));
    serde_json::from_str(line).expect("report is JSON")
}

#[test]
fn concurrent_runs_never_overlap_and_tokens_grow() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path(), "t.db");
    let log = dir.path().join("log");
    // Each holder logs its start and end (ns timestamps) around a 300 ms critical section.
    let script = format!(
        "echo start $(date +%s%N) $BATON_FENCING_TOKEN >> {0}; sleep 0.3; echo end $(date +%s%N) $BATON_FENCING_TOKEN >> {0}",
        log.display()
    );
    for _round in 0..2 {
        let children: Vec<Child> = (0..4)
            .map(|_| {
                baton()
                    .args(["run", "--url", &url, "--wait", "60s", "shared/job", "--", "sh", "-c", &script])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        // 4 × 0.3 s of holding plus polling hand-offs: 60 s only catches a hang.
        for c in children {
            let out = wait_output(c, Duration::from_secs(60), "baton run");
            assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        }
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<(String, u128, u64)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_owned(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(events.len(), 16, "{text}");
    let mut last_end: Option<(u128, u64)> = None;
    for pair in events.chunks(2) {
        let (start, end) = (&pair[0], &pair[1]);
        // Exclusion: every section ends before the next begins, with nothing interleaved.
        assert_eq!((start.0.as_str(), end.0.as_str()), ("start", "end"), "interleaved sections:\n{text}");
        assert_eq!(start.2, end.2, "one section, one token:\n{text}");
        assert!(end.1 >= start.1 + 250_000_000, "section shorter than its sleep:\n{text}");
        if let Some((prev_end, prev_token)) = last_end {
            assert!(start.1 >= prev_end, "sections overlap:\n{text}");
            assert!(start.2 > prev_token, "fencing token did not grow:\n{text}");
        }
        last_end = Some((end.1, end.2));
    }
}

#[test]
fn exits_with_the_commands_code_and_exports_the_lock() {
    let out = run_to_end(
        baton().args([
            "run",
            "--url",
            "memory://",
            "jobs/7",
            "--",
            "sh",
            "-c",
            "echo $BATON_LOCK_NAME $BATON_FENCING_TOKEN; exit 7",
        ]),
        Duration::from_secs(30),
        "baton run",
    );
    assert_eq!(out.status.code(), Some(7), "stderr: {}", stderr(&out));
    // The token: the store's first, 1 or the store's clock in µs (memory://'s clock counts
    // from the process's first use, so it depends on how fast the process got there).
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (name, token) = stdout.trim().split_once(' ').expect("name and token");
    assert_eq!(name, "jobs/7");
    assert!(token.parse::<u64>().is_ok_and(|t| t >= 1), "token {token}");

    // A command killed by a signal: 128 + N, as shells report it.
    let out = run_to_end(
        baton().args(["run", "--url", "memory://", "jobs/7", "--", "sh", "-c", "kill -9 $$"]),
        Duration::from_secs(30),
        "baton run",
    );
    assert_eq!(out.status.code(), Some(137));
    let out = run_to_end(
        baton().args(["run", "--url", "memory://", "x", "--", "/nonexistent/cmd"]),
        Duration::from_secs(30),
        "run",
    );
    assert_eq!(out.status.code(), Some(127), "stderr: {}", stderr(&out));
}

#[test]
fn lost_lease_stops_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path(), "lease.db");
    let started = Instant::now();
    let out = run_to_end(
        baton().args(["run", "--url", &url, "--ttl", "1s", "--json", "short/lease", "--", "sleep", "30"]),
        Duration::from_secs(40),
        "baton run --ttl 1s",
    );
    let took = started.elapsed();
    // The ttl ends after 1 s and `sleep` dies of the SIGTERM at once; 15 s leaves room for
    // a very slow machine while staying far from the command's own 30 s.
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_eq!(out.status.code(), Some(76), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("lost"), "{}", stderr(&out));
    let report = run_report(&out);
    assert_eq!(report["lost"], true);
    assert_eq!(report["command_signal"], 15, "the command must have died of SIGTERM: {report}");
    assert_eq!(report["exit_code"], 76);
}

#[test]
fn grace_period_ends_in_sigkill() {
    let out = run_to_end(
        baton().args([
            "run",
            "--url",
            "memory://",
            "--ttl",
            "500ms",
            "--grace",
            "500ms",
            "--json",
            "stubborn",
            "--",
            "sh",
            "-c",
            "trap '' TERM; while :; do sleep 0.1; done",
        ]),
        Duration::from_secs(20),
        "baton run",
    );
    assert_eq!(out.status.code(), Some(76), "stderr: {}", stderr(&out));
    assert_eq!(run_report(&out)["command_signal"], 9, "{}", stderr(&out));

    // --signal picks what the command gets first.
    let out = run_to_end(
        baton().args([
            "run",
            "--url",
            "memory://",
            "--ttl",
            "300ms",
            "--signal",
            "INT",
            "--json",
            "polite",
            "--",
            "sleep",
            "30",
        ]),
        Duration::from_secs(20),
        "baton run --signal INT",
    );
    assert_eq!(out.status.code(), Some(76), "stderr: {}", stderr(&out));
    assert_eq!(run_report(&out)["command_signal"], 2, "{}", stderr(&out));
}

#[test]
fn demo_oversells_without_the_lock_and_not_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path(), "d.db");
    let started = Instant::now();
    let out = run_to_end(
        baton().args(["demo", "--url", &url, "--json", "--buyers", "12", "--stock", "3"]),
        Duration::from_secs(120),
        "baton demo",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    eprintln!("demo took {:?}", started.elapsed());
    let report: Value = serde_json::from_slice(&out.stdout).expect("demo --json prints JSON");
    let (unlocked, locked) = (&report["rounds"][0], &report["rounds"][1]);
    assert_eq!(unlocked["lock"], false);
    assert!(unlocked["oversold"].as_u64().unwrap() > 0, "round 1 should oversell: {unlocked}");
    assert!(unlocked["sold"].as_u64().unwrap() > 3);
    assert_eq!(locked["lock"], true);
    assert_eq!(locked["sold"], 3, "{locked}");
    assert_eq!(locked["oversold"], 0);
    assert_eq!(locked["duplicate_sales"], 0);
    assert_eq!(locked["final_stock"], 0);
    let tokens: Vec<u64> = locked["sales"].as_array().unwrap().iter().map(|s| s["token"].as_u64().unwrap()).collect();
    assert_eq!(tokens.len(), 12);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "every grant has its own, growing token: {tokens:?}");
    // The locked round sold from the store's fenced stock; round 3's paused buyer was refused.
    assert_eq!(locked["stock_in"], "fenced", "{locked}");
    let paused = &report["paused"];
    assert_eq!(paused["refused"], true, "{paused}");
    assert!(paused["next_token"].as_u64().unwrap() > paused["paused_token"].as_u64().unwrap(), "{paused}");
    assert_eq!(paused["final_stock"], 2, "only the later buyer's sale counts: {paused}");

    let out = run_to_end(baton().args(["demo", "--url", "memory://"]), Duration::from_secs(30), "demo");
    assert_eq!(out.status.code(), Some(64));
    assert!(stderr(&out).contains("memory://"), "{}", stderr(&out));
}

#[test]
fn inspect_shows_the_holder_of_a_running_command() {
    let dir = tempfile::tempdir().unwrap();
    inspect_shows_the_holder_on(&sqlite_url(dir.path(), "i.db"), "held/one", dir.path());
}

/// The same on ZooKeeper: `baton run` and `baton inspect` on `zk://`.
#[test]
fn run_and_inspect_on_zookeeper() {
    let Ok(url) = std::env::var("BATON_TEST_ZK_URL") else {
        assert!(std::env::var_os("CI").is_none(), "BATON_TEST_ZK_URL unset (`scripts/services start`)");
        eprintln!("BATON_TEST_ZK_URL unset: skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let name = format!("held/zk-{}", std::process::id());
    inspect_shows_the_holder_on(&url, &name, dir.path());
}

fn inspect_shows_the_holder_on(url: &str, name: &str, dir: &Path) {
    let url = url.to_owned();
    let token_file = dir.join("token");
    let script = format!("echo $BATON_FENCING_TOKEN > {}; exec sleep 30", token_file.display());
    let holder = baton()
        .args(["run", "--url", &url, name, "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let inspect = |json: bool| {
        let mut c = baton();
        c.args(["inspect", "--url", &url, name]);
        if json {
            c.arg("--json");
        }
        let out = run_to_end(&mut c, Duration::from_secs(30), "baton inspect");
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        out
    };
    // Wait (bounded) until the command runs, which is after the grant.
    let start = Instant::now();
    while std::fs::read_to_string(&token_file).map_or(true, |t| t.trim().is_empty()) {
        assert!(start.elapsed() < Duration::from_secs(30), "the holder never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let token: u64 = std::fs::read_to_string(&token_file).unwrap().trim().parse().unwrap();
    let seen: Value = serde_json::from_slice(&inspect(true).stdout).unwrap();
    assert_eq!(seen["held"], true, "{seen}");
    assert_eq!(seen["holders"][0]["token"], token);
    assert_eq!(seen["holders"][0]["count"], 1);
    assert_eq!(seen["holders"][0]["mode"], "exclusive");
    assert!(seen["holders"][0]["lease_left_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(seen["last_token"], token);
    let human = String::from_utf8(inspect(false).stdout).unwrap();
    assert!(human.contains("exclusive") && human.contains(&token.to_string()), "{human}");

    // A second run cannot get in: a bounded wait fails with EX_TEMPFAIL.
    let busy = run_to_end(
        baton().args(["run", "--url", &url, "--wait", "300ms", name, "--", "true"]),
        Duration::from_secs(30),
        "run --wait",
    );
    assert_eq!(busy.status.code(), Some(75), "stderr: {}", stderr(&busy));
    assert!(stderr(&busy).contains(name));
    let busy = run_to_end(
        baton().args(["run", "--url", &url, "--wait", "0", name, "--", "true"]),
        Duration::from_secs(30),
        "run",
    );
    assert_eq!(busy.status.code(), Some(75));

    // SIGTERM to baton reaches the command; the lock is released on the way out.
    // SAFETY: kill has no memory-safety preconditions; the pid is our running child.
    unsafe {
        libc::kill(holder.id() as libc::pid_t, libc::SIGTERM);
    }
    let out = wait_output(holder, Duration::from_secs(30), "baton run after SIGTERM");
    assert_eq!(out.status.code(), Some(128 + 15), "stderr: {}", stderr(&out));
    let seen: Value = serde_json::from_slice(&inspect(true).stdout).unwrap();
    assert_eq!(seen["held"], false, "{seen}");
    assert_eq!(seen["last_token"], token);
}

#[test]
fn bad_input_is_reported_without_panicking() {
    let long = "n".repeat(300);
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["run", "--url", "memory://", "--ttl", "0s", "n", "--", "true"], 64, "0s"),
        (vec!["run", "--url", "memory://", "--ttl", "0.5ms", "n", "--", "true"], 64, "minimum lease"),
        (vec!["run", "--url", "memory://", "--ttl", "99ms", "n", "--", "true"], 64, "minimum lease"),
        (vec!["run", "--url", "memory://?lease=10ms", "n", "--", "true"], 64, "minimum lease"),
        (vec!["run", "--url", "memory://", "--ttl", "-1", "n", "--", "true"], 64, "-1"),
        (vec!["run", "--url", "memory://", "--wait", "abc", "n", "--", "true"], 64, "abc"),
        (vec!["run", "--url", "memory://", "--grace", "soon", "n", "--", "true"], 64, "soon"),
        (vec!["run", "--url", "memory://", "--ttl", "9999999h", "n", "--", "true"], 64, "9999999h"),
        (vec!["run", "--url", "memory://", "--signal", "bogus", "n", "--", "true"], 64, "bogus"),
        (vec!["run", "--url", "nope://x", "n", "--", "true"], 64, "nope"),
        (vec!["run", "--url", "not a url", "n", "--", "true"], 64, "not a url"),
        (vec!["run", "--url", "sqlite://", "n", "--", "true"], 64, "sqlite://"),
        (vec!["run", "--url", "memory://?bogus=1", "n", "--", "true"], 64, "bogus"),
        // Port 1: nothing listens there, so the store is unreachable (69) whatever runs on 6379.
        (vec!["run", "--url", "redis://u:hunter2@127.0.0.1:1", "n", "--", "true"], 69, "redis"),
        (vec!["run", "--url", "memory://", "", "--", "true"], 64, "empty"),
        (vec!["run", "--url", "memory://", &long, "--", "true"], 64, "300 bytes"),
        (vec!["run", "--url", "memory://", "n"], 64, "CMD"),
        (vec!["run", "--url", "memory://", "n", "--"], 64, "CMD"),
        (vec!["run", "--url", "memory://"], 64, "NAME"),
        (vec!["inspect", "--url", "memory://", ""], 64, "empty"),
        (vec!["bench", "--url", "memory://", "--duration", "0s"], 64, "0s"),
        (vec!["bench", "--url", "memory://", "--iterations", "0"], 64, "0"),
        (vec!["demo", "--buyers", "0", "--url", "memory://"], 64, "0"),
        (vec!["demo", "--stock", "x"], 64, "x"),
        (vec!["frobnicate"], 64, "frobnicate"),
    ];
    for (args, code, needle) in cases {
        let out = run_to_end(baton().args(&args), Duration::from_secs(30), "baton");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: message should name {needle:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("hunter2"), "{args:?} leaked a password: {err}");
    }
}

#[test]
fn bench_reports_every_scenario() {
    let out = run_to_end(
        baton().args(["bench", "--url", "memory://", "--json", "--iterations", "300", "--duration", "1s"]),
        Duration::from_secs(60),
        "baton bench",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("bench --json prints JSON");
    assert_eq!(report["url"], "memory://");
    assert_eq!(report["iterations"], 300);
    let scenarios = report["scenarios"].as_array().unwrap();
    let names: Vec<&str> = scenarios.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["uncontended_1", "uncontended_64", "handoff"]);
    for s in scenarios {
        let ops = s["ops"].as_u64().unwrap();
        assert!((1..=300).contains(&ops), "{s}");
        for field in ["p50_us", "p99_us", "max_us", "ops_per_sec", "elapsed_ms"] {
            assert!(s[field].as_f64().unwrap() > 0.0, "{field} in {s}");
        }
        assert!(s["p50_us"].as_f64() <= s["p99_us"].as_f64() && s["p99_us"].as_f64() <= s["max_us"].as_f64(), "{s}");
    }
    assert_eq!(scenarios[1]["tasks"], 64);
}

/// `--contended N` adds N tasks on one name; each cycle waits its turn, so none overlaps
/// (memory:// hands the lock over in order) and the count is still bounded by --iterations.
#[test]
fn bench_contended_adds_tasks_on_one_name() {
    let out = run_to_end(
        baton()
            .args(["bench", "--url", "memory://", "--json", "--iterations", "200", "--duration", "1s"])
            .args(["--contended", "8"]),
        Duration::from_secs(60),
        "baton bench --contended",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("bench --json prints JSON");
    let scenarios = report["scenarios"].as_array().unwrap();
    let last = scenarios.last().unwrap();
    assert_eq!(last["name"], "contended");
    assert_eq!(last["tasks"], 8);
    let ops = last["ops"].as_u64().unwrap();
    assert!((8..=200).contains(&ops), "{last}");
    let bad =
        run_to_end(baton().args(["bench", "--url", "memory://", "--contended", "1"]), Duration::from_secs(30), "bad");
    assert_eq!(bad.status.code(), Some(64), "--contended 1: {}", stderr(&bad));
}

/// `--runtime current-thread` and `--workers N` run the same scenarios and say so in the
/// report; `--workers` without a multi-thread runtime is a usage error.
#[test]
fn bench_runs_on_the_runtime_asked_for() {
    for (flags, runtime, workers) in [
        (&["--runtime", "current-thread"][..], "current-thread", None),
        (&["--workers", "1"][..], "multi-thread", Some(1)),
    ] {
        let mut cmd = baton();
        cmd.args(["bench", "--url", "memory://", "--json", "--iterations", "200", "--duration", "1s"]).args(flags);
        let out = run_to_end(&mut cmd, Duration::from_secs(60), "baton bench");
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {}", stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).expect("bench --json prints JSON");
        assert_eq!(report["runtime"], runtime, "{flags:?}");
        assert_eq!(report["workers"].as_u64(), workers, "{flags:?}");
        let scenarios = report["scenarios"].as_array().unwrap();
        assert_eq!(scenarios.len(), 3, "{flags:?}: {report}");
        assert!(scenarios.iter().all(|s| s["ops"].as_u64().unwrap() > 0), "{flags:?}: {report}");
    }
    let out = run_to_end(
        baton().args(["bench", "--url", "memory://", "--runtime", "current-thread", "--workers", "2"]),
        Duration::from_secs(60),
        "baton bench",
    );
    assert_eq!(out.status.code(), Some(64));
    assert!(stderr(&out).contains("--workers needs --runtime multi-thread"), "{}", stderr(&out));
}

/// On the networked stores too, `baton bench` runs the three user scenarios and only
/// those (the store investigations are the `baton-benches` crate's criterion benches).
#[test]
fn bench_on_redlock_etcd_and_zk_reports_the_user_scenarios() {
    for var in ["BATON_TEST_REDLOCK_URL", "BATON_TEST_ETCD_URL", "BATON_TEST_ZK_URL"] {
        let Ok(url) = std::env::var(var) else {
            assert!(std::env::var_os("CI").is_none(), "{var} unset (`scripts/services start`)");
            eprintln!("{var} unset: skipping");
            continue;
        };
        let out = run_to_end(
            baton().args(["bench", "--url", &url, "--json", "--iterations", "30", "--duration", "2s"]),
            Duration::from_secs(120),
            "baton bench",
        );
        assert_eq!(out.status.code(), Some(0), "{var}: {}", stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).expect("bench --json prints JSON");
        let scenarios = report["scenarios"].as_array().unwrap();
        let names: Vec<&str> = scenarios.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["uncontended_1", "uncontended_64", "handoff"], "{var}");
        for s in scenarios {
            assert!((1..=30).contains(&s["ops"].as_u64().unwrap()), "{var}: {s}");
            assert!(s["p50_us"].as_f64().unwrap() > 0.0, "{var}: {s}");
        }
    }
}

/// `baton lab --json` over `schemes`, on the shared Redis server when there is one (the
/// lab's own otherwise); names are random.
fn lab_json(schemes: &[&str]) -> Command {
    let mut cmd = baton();
    cmd.arg("lab").arg("--json");
    for s in schemes {
        cmd.args(["--scheme", s]);
    }
    if let Ok(url) = std::env::var("BATON_TEST_REDIS_URL") {
        cmd.args(["--url", &url]);
    }
    cmd
}

#[test]
fn lab_prints_the_matrix_and_writes_markdown() {
    let have_server = Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_ok();
    if !have_server {
        assert!(std::env::var_os("CI").is_none(), "redis-server not installed (`scripts/services start redis`)");
        eprintln!("redis-server not on PATH: skipping baton lab");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("lab.md");
    let mut cmd = lab_json(&["setnx-expire", "set-nx-px-lua", "redisson"]);
    cmd.args(["--markdown", md.to_str().unwrap()]);
    // Three schemes take ~5 s here; 120 s only catches a hang.
    let out = run_to_end(&mut cmd, Duration::from_secs(120), "baton lab");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let m: Value = serde_json::from_slice(&out.stdout).expect("lab --json prints JSON");
    let rows = m["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["scheme"].as_str().unwrap()).collect();
    assert_eq!(names, ["setnx-expire", "set-nx-px-lua", "redisson"]);
    let cell = |row: usize, p: &str| &rows[row]["cells"][p];
    assert_eq!(cell(0, "no_deadlock")["flaw"], "crash_between_steps", "{m}");
    // A server's clock stepped forward ends a lease on it (the fault needs libfaketime).
    let stepped = baton_lab::faketime_available();
    let exclusion = |row: usize| cell(row, "mutual_exclusion")["flaw"].as_str().map(str::to_owned);
    let want = stepped.then(|| "server_clock_step".to_owned());
    assert_eq!((exclusion(1), exclusion(2)), (want.clone(), want), "{m}");
    assert_eq!(cell(1, "fenced")["flaw"], "no_token", "{m}");
    assert_eq!(cell(2, "fenced")["result"], "kept", "{m}");
    assert_eq!(cell(2, "survives_node_loss")["flaw"], "promoted_replica_forgot_lock", "{m}");
    let text = std::fs::read_to_string(&md).unwrap();
    let row = if stepped {
        "| `redisson` | ✗ | ✓ | ✓ | ✗ | ✓ |"
    } else {
        "| `redisson` | ✓ | ✓ | ✓ | ✗ | ✓ |"
    };
    assert!(text.contains(row), "{text}");
    assert!(
        text.contains("- ✗ setnx-expire / no deadlock after holder crash: the holder crashed between SETNX and EXPIRE"),
        "{text}"
    );

    let out = run_to_end(baton().args(["lab", "--url", "memory://"]), Duration::from_secs(30), "baton lab");
    assert_eq!(out.status.code(), Some(64), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("needs a redis:// or rediss:// URL"), "{}", stderr(&out));
}

/// `baton lab`'s SQLite rows under the machine-clock fault: a second process whose wall
/// clock runs 60 s ahead (libfaketime) must find a live lease held, on every SQLite scheme.
#[test]
fn lab_sqlite_rows_keep_exclusion_through_a_machine_clock_step() {
    let have_server = Command::new("redis-server").arg("--version").stdout(Stdio::null()).status().is_ok();
    if !have_server || baton_lab::faketime_lib().is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server or libfaketime not installed (scripts/suites/30-rust.sh)"
        );
        eprintln!("redis-server or libfaketime missing: skipping");
        return;
    }
    let mut cmd = lab_json(&["sqlite-state", "sqlite-table", "sqlite-optimistic"]);
    // Three SQLite rows take ~10 s here; 180 s only catches a hang.
    let out = run_to_end(&mut cmd, Duration::from_secs(180), "baton lab");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let m: Value = serde_json::from_slice(&out.stdout).expect("lab --json prints JSON");
    for row in m["rows"].as_array().unwrap() {
        assert_eq!(row["cells"]["mutual_exclusion"]["result"], "kept", "{row}");
    }
}

/// Lines in `log`, waiting until it stops growing for `quiet`: (lines, whether it stopped
/// within `limit`).
fn settles(log: &Path, quiet: Duration, limit: Duration) -> (usize, bool) {
    let count = || std::fs::read_to_string(log).map(|s| s.lines().count()).unwrap_or(0);
    let t0 = Instant::now();
    let mut last = (count(), Instant::now());
    while t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
        let n = count();
        if n != last.0 {
            last = (n, Instant::now());
        } else if last.1.elapsed() >= quiet {
            return (n, true);
        }
    }
    (last.0, false)
}

/// A writer whose lines reach `log` through a grandchild (`… | cat >> log`), as the
/// shell runs a pipeline: the direct child is `sh`, the writer is `cat`.
fn pipeline_writer(log: &Path) -> String {
    format!("while :; do echo x; sleep 0.02; done | cat >> {}", log.display())
}

/// After a lost lease, the whole pipeline stops, not only `sh`.
#[test]
fn lost_lease_stops_the_whole_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let out = run_to_end(
        baton().args([
            "run",
            "--url",
            "memory://",
            "--ttl",
            "1s",
            "tree/lost",
            "--",
            "sh",
            "-c",
            &pipeline_writer(&log),
        ]),
        Duration::from_secs(30),
        "baton run --ttl 1s",
    );
    assert_eq!(out.status.code(), Some(76), "stderr: {}", stderr(&out));
    let (lines, still) = settles(&log, Duration::from_millis(600), Duration::from_secs(3));
    assert!(lines > 0, "the pipeline wrote nothing");
    assert!(still, "the pipeline kept writing after baton exited 76");
    // Quiet from baton's exit on: at most what was in flight.
    let after = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(after, lines);
}

/// baton SIGKILLed while its command runs: the reaper kills the command's whole tree at
/// once, so nothing writes after baton is gone.
#[test]
fn sigkilled_baton_leaves_no_process_of_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let url = sqlite_url(dir.path(), "kill.db");
    let mut child = baton()
        .args(["run", "--url", &url, "tree/killed", "--", "sh", "-c", &pipeline_writer(&log)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::read_to_string(&log).map(|s| s.lines().count()).unwrap_or(0) < 5 {
        assert!(t0.elapsed() < Duration::from_secs(20), "the command never wrote");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    let (lines, still) = settles(&log, Duration::from_millis(600), Duration::from_secs(3));
    assert!(still, "the command's pipeline kept writing after baton was SIGKILLed");
    // The reaper acts at once: the writer stopped well within the first quiet period.
    assert!(killed.elapsed() < Duration::from_secs(2), "stopped only after {:?}", killed.elapsed());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), lines, "a line after the tree was gone");
}

/// What the command leaves running in its group when it ends is killed before the lock is
/// released.
#[test]
fn leftovers_of_the_command_are_killed_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let script = format!("(while :; do echo x >> {}; sleep 0.02; done) & sleep 0.3", log.display());
    let out = run_to_end(
        baton().args(["run", "--url", "memory://", "tree/leftover", "--", "sh", "-c", &script]),
        Duration::from_secs(30),
        "baton run",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let (lines, still) = settles(&log, Duration::from_millis(600), Duration::from_secs(3));
    assert!(lines > 0 && still, "the background loop outlived the command ({lines} lines)");
}

/// SQLite leases are measured on CLOCK_BOOTTIME, in baton's own design and in the
/// `?scheme=` designs whose statements judge expiries (`baton_now_ms()`): a process whose
/// wall clock runs 60 s ahead (libfaketime, wall clock only) still finds the lock held.
#[test]
fn sqlite_leases_ignore_a_wall_clock_step() {
    let lib =
        ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"]
            .into_iter()
            .find(|p| Path::new(p).exists());
    let Some(lib) = lib else {
        assert!(
            std::env::var_os("CI").is_none(),
            "libfaketime is not installed (scripts/suites/30-rust.sh installs it)"
        );
        eprintln!("libfaketime not installed: skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (file, query) in [("clock.db", ""), ("table.db", "?scheme=table"), ("optimistic.db", "?scheme=optimistic")] {
        let url = format!("{}{query}", sqlite_url(dir.path(), file));
        let mut holder = baton()
            .args(["run", "--url", &url, "--ttl", "20s", "clock/step", "--", "sleep", "30"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let busy = || {
            let out = run_to_end(
                baton().args(["inspect", "--url", &url, "--json", "clock/step"]),
                Duration::from_secs(30),
                "inspect",
            );
            serde_json::from_slice::<Value>(&out.stdout).is_ok_and(|v| v["held"] == true)
        };
        let t0 = Instant::now();
        while !busy() {
            assert!(t0.elapsed() < Duration::from_secs(20), "{url}: the holder never held");
            std::thread::sleep(Duration::from_millis(50));
        }
        for ahead in ["+60s", "+1d"] {
            let out = run_to_end(
                baton()
                    .args(["run", "--url", &url, "--wait", "0", "clock/step", "--", "true"])
                    .env("LD_PRELOAD", lib)
                    .env("FAKETIME", ahead)
                    .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
                    .env("FAKETIME_DONT_RESET", "1"),
                Duration::from_secs(30),
                "baton run under faketime",
            );
            assert_eq!(
                out.status.code(),
                Some(75),
                "{url}, clock {ahead}: the lock must still be busy; stderr: {}",
                stderr(&out)
            );
        }
        let _ = holder.kill();
        let _ = holder.wait();
    }
}

/// A refused password is one kind on every store: `baton run` exits 69 (Connection), and
/// the password never shows.
#[test]
fn refused_credentials_exit_69_on_every_store() {
    // (The shared PostgreSQL trusts loopback: any password is accepted there.)
    for var in ["BATON_TEST_MYSQL_URL", "BATON_TEST_ETCDS_URL", "BATON_TEST_ETCD_HTTPS_URL"] {
        let Ok(url) = std::env::var(var) else {
            assert!(std::env::var_os("CI").is_none(), "{var} unset (`scripts/services start`)");
            eprintln!("{var} unset: skipping");
            continue;
        };
        // user:password@ → user:wrong-pw-4711@
        let (head, rest) = url.split_once("://").unwrap();
        let (userinfo, tail) = rest.split_once('@').expect("a URL with credentials");
        let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
        let bad = format!("{head}://{user}:wrong-pw-4711@{tail}");
        let out = run_to_end(
            baton().args(["run", "--url", &bad, "--wait", "5s", "auth/refused", "--", "true"]),
            Duration::from_secs(60),
            "baton run with a wrong password",
        );
        assert_eq!(out.status.code(), Some(69), "{var}: {}", stderr(&out));
        assert!(!stderr(&out).contains("wrong-pw-4711"), "{var}: {}", stderr(&out));
    }
    // Redis and Redlock (issue #39 item 15): a redis-server of the test's own with
    // `requirepass`, asked with a wrong password and with none, is 69 with one short line
    // (it was 70, with a 1 487-byte "Pipeline failures" dump for the missing password).
    if std::process::Command::new("redis-server").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "redis-server not installed");
        return;
    }
    let pw = "Own-Req-Pass-2231";
    let mut own = baton_lab::OwnRedis::configure(tempfile::tempdir().unwrap(), None, |a| {
        a.extend(["--requirepass".to_owned(), pw.to_owned()]);
    })
    .unwrap();
    own.run().unwrap();
    let at = format!("127.0.0.1:{}", own.port);
    for url in [
        format!("redis://:wrong-pw-4711@{at}?connect_timeout=2s"),
        format!("redis://{at}?connect_timeout=2s"),
        format!("redlock://:wrong-pw-4711@{at}?connect_timeout=2s&node_timeout=1s"),
        format!("redlock://{at}?connect_timeout=2s&node_timeout=1s"),
    ] {
        let out = run_to_end(
            baton().args(["run", "--url", &url, "--wait", "5s", "auth/refused", "--", "true"]),
            Duration::from_secs(60),
            "baton run with a wrong or no password",
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(69), "{url}: {err}");
        assert!(!err.contains("wrong-pw-4711") && !err.contains(pw), "{url}: {err}");
        assert!(err.contains("NOAUTH") || err.contains("WRONGPASS"), "{url}: {err}");
        assert!(err.len() < 600 && !err.contains("Pipeline"), "{url}: {} bytes: {err}", err.len());
    }
}

/// The store URLs of the suite's servers (from the environment), and a SQLite file in
/// `dir`: the process-tree and grace tests run on every one of them.
fn every_store(dir: &Path) -> Vec<(String, String)> {
    let mut stores = vec![("sqlite".to_owned(), sqlite_url(dir, "stores.db"))];
    for var in [
        "BATON_TEST_REDIS_URL",
        "BATON_TEST_REDLOCK_URL",
        "BATON_TEST_POSTGRES_URL",
        "BATON_TEST_MYSQL_URL",
        "BATON_TEST_ETCD_URL",
        "BATON_TEST_ZK_URL",
    ] {
        match std::env::var(var) {
            Ok(url) => stores.push((var.trim_start_matches("BATON_TEST_").to_owned(), url)),
            Err(_) => {
                assert!(std::env::var_os("CI").is_none(), "{var} unset (`scripts/services start`)");
                eprintln!("{var} unset: skipping that store");
            }
        }
    }
    stores
}

/// A lock name no other test or run uses.
fn unique(what: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("tree/{what}-{}-{t}-{n}", std::process::id())
}

/// A shell loop appending a nanosecond timestamp to `log` every 0.1 s, for at most 60 s.
fn stamping_loop(log: &Path) -> String {
    format!("for i in $(seq 600); do date +%s%N >> {}; sleep 0.1; done", log.display())
}

/// Timestamps (ns since the epoch) in `log`.
fn stamps(log: &Path) -> Vec<u128> {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Waits (bounded) until `log` has at least `n` lines.
fn wait_for_lines(log: &Path, n: usize, what: &str) {
    let t0 = Instant::now();
    while stamps(log).len() < n {
        assert!(t0.elapsed() < Duration::from_secs(30), "{what}: the command never wrote");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The next holder: waits for `name`, records the time of its grant (ns) in `grant`.
fn next_holder(url: &str, name: &str, grant: &Path) -> Child {
    baton()
        .args(["run", "--url", url, "--wait", "60s", name, "--", "sh", "-c"])
        .arg(format!("date +%s%N > {}", grant.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn grant_time(grant: &Path, what: &str) -> u128 {
    std::fs::read_to_string(grant)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{what}: the next holder recorded no grant"))
}

/// Asserts that nothing of the first holder's command wrote to `log` after the next
/// holder's grant, nor once both batons exited (checked again after a pause).
fn quiet_after(log: &Path, granted: u128, what: &str) {
    if let Err(e) = check_quiet(log, granted, what) {
        panic!("{e}");
    }
}

/// [`quiet_after`], as a result.
fn check_quiet(log: &Path, granted: u128, what: &str) -> Result<(), String> {
    // Writes in flight when the tree was killed land within a few ms; 600 ms is ample.
    std::thread::sleep(Duration::from_millis(600));
    let all = stamps(log);
    let late: Vec<u128> = all.iter().copied().filter(|&t| t > granted).collect();
    if let Some(first) = late.first() {
        return Err(format!(
            "{what}: {} lines written after the next holder's grant (first {:.3} s after it)",
            late.len(),
            (first - granted) as f64 / 1e9
        ));
    }
    std::thread::sleep(Duration::from_millis(500));
    if stamps(log).len() != all.len() {
        return Err(format!("{what}: the command's tree still writes after baton exited"));
    }
    Ok(())
}

/// Runs every round, then fails with all the failures (not only the first).
fn all_pass(failures: &[String]) {
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
}

/// The commands that leave `baton run`'s process group, or ignore SIGTERM, or both; each
/// appends timestamps to `log` every 0.1 s for up to 60 s.
fn escaping_commands(log: &Path) -> Vec<(&'static str, Vec<String>)> {
    let lp = stamping_loop(log);
    let sh = |shell: &str, script: String| vec![shell.to_owned(), "-c".to_owned(), script];
    vec![
        // GNU timeout (without --foreground) puts itself in a process group of its own:
        // as the command, and under a shell.
        ("timeout", vec!["timeout".to_owned(), "60".to_owned(), "sh".to_owned(), "-c".to_owned(), lp.clone()]),
        ("sh + timeout", sh("sh", format!("timeout 60 sh -c '{lp}'; :"))),
        // A job-control background job: a group of its own too (bash: dash refuses `set -m`
        // without a terminal).
        ("set -m", sh("bash", format!("set -m; ({lp}) & wait"))),
        // Ignores SIGTERM: only the SIGKILL stops it.
        ("trap TERM", sh("sh", format!("trap '' TERM; {lp}"))),
        // Both: another group, and SIGTERM ignored (inherited by the job).
        ("trap TERM + set -m", sh("bash", format!("trap '' TERM; set -m; ({lp}) & wait"))),
    ]
}

/// One lost-lease round: the holder runs `cmd` under `--ttl 3s` (default grace), a next
/// holder waits; nothing of `cmd`'s tree may write after the next grant.
fn lost_lease_round(
    url: &str,
    store: &str,
    variant: &str,
    cmd: &[String],
    log: &Path,
    dir: &Path,
) -> Result<(), String> {
    lost_lease_round_with(url, store, variant, cmd, log, dir, false)
}

/// [`lost_lease_round`]; `no_cgroup`: baton without a cgroup (the subreaper walk alone).
fn lost_lease_round_with(
    url: &str,
    store: &str,
    variant: &str,
    cmd: &[String],
    log: &Path,
    dir: &Path,
    no_cgroup: bool,
) -> Result<(), String> {
    let what = format!("{store} / {variant}");
    let name = unique("lost");
    let grant = dir.join(format!("grant-{}", variant.replace(' ', "_")));
    let mut holder = baton();
    if no_cgroup {
        holder.env("BATON_NO_CGROUP", "1");
    }
    let holder = holder
        .args(["run", "--url", url, "--ttl", "3s", &name, "--"])
        .args(cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_lines(log, 1, &what);
    let next = next_holder(url, &name, &grant);
    // A 3 s lease (room for a loaded machine to start the command), then the next grant: 60 s only catches a hang.
    let out = wait_output(holder, Duration::from_secs(60), &what);
    let out_next = wait_output(next, Duration::from_secs(60), &what);
    if out_next.status.code() != Some(0) {
        return Err(format!("{what}: next holder: {:?}: {}", out_next.status, stderr(&out_next)));
    }
    let quiet = check_quiet(log, grant_time(&grant, &what), &what);
    if out.status.code() != Some(76) {
        return Err(format!("{what}: holder exited {:?}, not 76: {}", out.status, stderr(&out)));
    }
    quiet
}

/// Issue #39, items 1 and 4, on every server store: a command that leaves the process
/// group (`timeout`, `set -m`) or ignores SIGTERM is stopped before the store can grant
/// the lock again: SIGTERM goes a grace before the local end of the lease (the grace capped
/// to half the 3 s lease), SIGKILL at that end, to every process of the tree. Before the
/// fix the signals went to the process group only and the SIGKILL came 10 s after the
/// lease's end: every variant wrote inside the next holder's hold.
#[test]
fn lost_lease_stops_every_process_of_the_tree_before_the_next_grant_on_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let stores = every_store(dir.path());
    std::thread::scope(|s| {
        for (store, url) in &stores {
            let base = dir.path().join(store);
            std::fs::create_dir_all(&base).unwrap();
            s.spawn(move || {
                let mut failures = Vec::new();
                for i in 0..escaping_commands(&base).len() {
                    let log = base.join(format!("log-{i}"));
                    let (variant, cmd) = escaping_commands(&log).swap_remove(i);
                    failures.extend(lost_lease_round(url, store, variant, &cmd, &log, &base).err());
                }
                all_pass(&failures);
            });
        }
    });
}

/// Issue #39, item 1: what the command leaves running when it ends, in other process
/// groups or sessions (`set -m`, `timeout`, `setsid` after a double fork), is killed before
/// the release, on every server store. Before the fix only the command's own group was
/// killed and each variant kept writing through the next holder's hold.
#[test]
fn leftovers_outside_the_group_are_killed_before_the_release_on_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let stores = every_store(dir.path());
    std::thread::scope(|s| {
        for (store, url) in &stores {
            let base = dir.path().join(store);
            std::fs::create_dir_all(&base).unwrap();
            s.spawn(move || {
                let mut failures = Vec::new();
                for (variant, script) in [
                    ("set -m", "set -m; (LOOP) & sleep 0.5"),
                    ("timeout", "timeout 60 sh -c 'LOOP' & sleep 0.5"),
                    ("double fork + setsid", "(setsid sh -c 'LOOP' &); sleep 0.5"),
                ] {
                    let what = format!("{store} / leftover {variant}");
                    let log = base.join(format!("left-{}", variant.replace(' ', "_")));
                    let grant = base.join(format!("left-grant-{}", variant.replace(' ', "_")));
                    let script = script.replace("LOOP", &stamping_loop(&log));
                    let name = unique("leftover");
                    // Not pipes: a leftover holding them open would hold up reading them.
                    let errfile = base.join(format!("left-stderr-{}", variant.replace(' ', "_")));
                    let child = baton()
                        .args(["run", "--url", url, &name, "--", "bash", "-c", &script])
                        .stdout(Stdio::null())
                        .stderr(std::fs::File::create(&errfile).unwrap())
                        .spawn()
                        .unwrap();
                    let out = wait_output(child, Duration::from_secs(60), &what);
                    let err = std::fs::read_to_string(&errfile).unwrap_or_default();
                    assert_eq!(out.status.code(), Some(0), "{what}: {err}");
                    assert!(!stamps(&log).is_empty(), "{what}: the leftover never wrote");
                    let next = wait_output(next_holder(url, &name, &grant), Duration::from_secs(60), &what);
                    assert_eq!(next.status.code(), Some(0), "{what}: {}", stderr(&next));
                    failures.extend(check_quiet(&log, grant_time(&grant, &what), &what).err());
                }
                all_pass(&failures);
            });
        }
    });
}

/// Issue #39, item 1: baton SIGKILLed while its command's tree has left the group
/// (`set -m`, `timeout`, a double fork into a new session): the reaper, an ancestor of
/// every process of the tree and a child subreaper, kills all of it at once.
#[test]
fn sigkilled_baton_leaves_no_process_outside_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path(), "kill-tree.db");
    let mut failures = Vec::new();
    for (variant, script) in [
        ("set -m", "set -m; (LOOP) & wait"),
        ("timeout", "timeout 60 sh -c 'LOOP'"),
        ("double fork + setsid", "(setsid sh -c 'LOOP' &); sleep 60"),
    ] {
        let log = dir.path().join(format!("killed-{}", variant.replace(' ', "_")));
        let script = script.replace("LOOP", &stamping_loop(&log));
        let mut child = baton()
            .args(["run", "--url", &url, &unique("killed"), "--", "bash", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_lines(&log, 3, variant);
        child.kill().unwrap();
        child.wait().unwrap();
        let killed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        // The reaper acts at once: a line already being written may land, not more.
        failures.extend(check_quiet(&log, killed + 200_000_000, variant).err());
    }
    all_pass(&failures);
}

/// Issue #39, item 4: a command that ignores SIGTERM, under `--ttl 3s` and the default
/// `--grace 10s` (capped to half the lease): it is dead before the next holder's grant.
/// Before the fix SIGTERM came at the local end of the lease and SIGKILL 10 s later: the
/// command wrote through the next holder's grant.
#[test]
fn term_ignoring_command_is_dead_before_the_next_grant() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path(), "grace.db");
    let log = dir.path().join("log");
    let cmd = ["sh".to_owned(), "-c".to_owned(), format!("trap '' TERM; {}", stamping_loop(&log))];
    all_pass(
        &lost_lease_round(&url, "sqlite", "trap TERM, default grace", &cmd, &log, dir.path())
            .err()
            .into_iter()
            .collect::<Vec<_>>(),
    );
}

/// Issue #39, item 12: baton's stderr a pipe nobody reads (`baton run … 2>&1 | true`):
/// writing its report or its error fails with EPIPE, and baton still exits with the
/// command's code, 76 or its own code. Before the fix `eprintln!` panicked: exit 101.
#[test]
fn a_closed_stderr_does_not_replace_the_exit_code() {
    let cases: [(&[&str], i32); 4] = [
        (&["run", "--url", "memory://", "--json", "epipe/a", "--", "sh", "-c", "exit 3"], 3),
        (&["run", "--url", "memory://", "--json", "epipe/b", "--", "true"], 0),
        (&["run", "--url", "memory://", "--ttl", "300ms", "--json", "epipe/c", "--", "sleep", "5"], 76),
        (&["run", "--url", "memory://", "", "--", "true"], 64),
    ];
    for (args, code) in cases {
        let mut child = baton().args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        // Closes the read end: every write to baton's stderr fails with EPIPE.
        drop(child.stderr.take());
        let out = wait_output(child, Duration::from_secs(30), "baton with a closed stderr");
        assert_eq!(out.status.code(), Some(code), "{args:?}");
    }
}

/// Issue #39, item 18: SIGUSR1, SIGUSR2, SIGQUIT and SIGALRM sent to baton holding a lock
/// are forwarded to the command, the lock is released and baton exits 128+N; sent while it
/// waits, they end the wait with 128+N. Before the fix SIGUSR1 killed baton (no release:
/// the lock stayed held until its lease ended).
#[test]
fn usr1_usr2_quit_alrm_release_the_lock_and_exit_128_plus_n() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path(), "signals.db");
    let held = |name: &str| {
        let out =
            run_to_end(baton().args(["inspect", "--url", &url, "--json", name]), Duration::from_secs(30), "inspect");
        serde_json::from_slice::<Value>(&out.stdout).is_ok_and(|v| v["held"] == true)
    };
    for sig in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGQUIT, libc::SIGALRM] {
        let name = unique(&format!("sig{sig}"));
        let holder = baton()
            .args(["run", "--url", &url, &name, "--", "sleep", "30"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !held(&name) {
            assert!(t0.elapsed() < Duration::from_secs(20), "signal {sig}: never held");
            std::thread::sleep(Duration::from_millis(50));
        }
        // A waiter for the same lock, ended by the same signal.
        let waiter = baton()
            .args(["run", "--url", &url, &name, "--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: kill has no memory-safety preconditions; the pids are our children.
        unsafe {
            libc::kill(waiter.id() as libc::pid_t, sig);
        }
        let out = wait_output(waiter, Duration::from_secs(30), "waiter");
        assert_eq!(out.status.code(), Some(128 + sig), "waiter, signal {sig}: {}", stderr(&out));
        // SAFETY: as above.
        unsafe {
            libc::kill(holder.id() as libc::pid_t, sig);
        }
        let out = wait_output(holder, Duration::from_secs(30), "holder");
        assert_eq!(out.status.code(), Some(128 + sig), "holder, signal {sig}: {}", stderr(&out));
        // Free at once (the watchdog lease would last 30 s).
        let next = run_to_end(
            baton().args(["run", "--url", &url, "--wait", "0", &name, "--", "true"]),
            Duration::from_secs(30),
            "next",
        );
        assert_eq!(next.status.code(), Some(0), "signal {sig}: the lock was left held: {}", stderr(&next));
    }
}

/// Issue #39, item 13: a stopped command (SIGSTOP to its group, as Ctrl-Z's SIGTSTP does
/// from a terminal) holds the lock for at most one lease (here the watchdog's 2 s, from
/// the URL): then baton kills its tree and releases. Continued afterwards, it writes
/// nothing after the next holder's grant. Continued within the lease, it goes on under the
/// same lease and ends normally. Before the fix baton renewed the lease of a stopped command
/// for ever: the next holder waited in vain.
#[test]
fn a_stopped_command_does_not_hold_the_lock_for_ever() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}?lease=2s", sqlite_url(dir.path(), "stopped.db"));
    let pid_of = |file: &Path| -> libc::pid_t {
        let t0 = Instant::now();
        loop {
            if let Some(p) = std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse().ok()) {
                return p;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "the command never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let group_signal = |pid: libc::pid_t, sig: libc::c_int| {
        // SAFETY: kill has no memory-safety preconditions; the group is our command's.
        unsafe {
            libc::kill(-pid, sig);
        }
    };

    // Stopped past the lease: killed, the lock released.
    let (log, pidfile, grant) = (dir.path().join("log"), dir.path().join("pid"), dir.path().join("grant"));
    let name = unique("stopped");
    let script = format!("echo $$ > {}; {}", pidfile.display(), stamping_loop(&log));
    let holder = baton()
        .args(["run", "--url", &url, &name, "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = pid_of(&pidfile);
    wait_for_lines(&log, 2, "stopped");
    group_signal(pid, libc::SIGSTOP);
    let stopped = Instant::now();
    let next = baton()
        .args(["run", "--url", &url, "--wait", "30s", &name, "--", "sh", "-c"])
        .arg(format!("date +%s%N > {}", grant.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out_next = wait_output(next, Duration::from_secs(60), "next holder");
    if out_next.status.code() != Some(0) {
        // Leave nothing running behind a failed test.
        group_signal(pid, libc::SIGKILL);
        let mut holder = holder;
        let _ = holder.kill();
        let _ = holder.wait();
        panic!("the lock was never freed: {}", stderr(&out_next));
    }
    // One 2 s lease from the stop; 8 s leaves room for a loaded machine, and is far from
    // "for ever".
    assert!(stopped.elapsed() < Duration::from_secs(8), "freed only after {:?}", stopped.elapsed());
    let out = wait_output(holder, Duration::from_secs(30), "stopped holder");
    assert_eq!(out.status.code(), Some(76), "{}", stderr(&out));
    assert!(stderr(&out).contains("stopped"), "{}", stderr(&out));
    group_signal(pid, libc::SIGCONT);
    quiet_after(&log, grant_time(&grant, "stopped"), "stopped, then continued");

    // Stopped briefly, continued within the lease: goes on, and ends as it would have.
    let (log, pidfile) = (dir.path().join("log2"), dir.path().join("pid2"));
    let script = format!(
        "echo $$ > {}; for i in $(seq 15); do date +%s%N >> {}; sleep 0.1; done",
        pidfile.display(),
        log.display()
    );
    let holder = baton()
        .args(["run", "--url", &url, &unique("paused"), "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = pid_of(&pidfile);
    wait_for_lines(&log, 2, "paused");
    group_signal(pid, libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(300));
    group_signal(pid, libc::SIGCONT);
    let out = wait_output(holder, Duration::from_secs(30), "paused holder");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stamps(&log).len(), 15);
}

/// Issue #39, item 1, where the machine gives no cgroup v2 (`BATON_NO_CGROUP=1` forces
/// that here): the subreaper walk alone finds and stops every escaping variant, on a lost
/// lease and when baton is SIGKILLed.
#[test]
fn without_a_cgroup_the_subreaper_walk_stops_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(dir.path(), "no-cgroup.db");
    let mut failures = Vec::new();
    for i in 0..escaping_commands(dir.path()).len() {
        let log = dir.path().join(format!("log-{i}"));
        let (variant, cmd) = escaping_commands(&log).swap_remove(i);
        failures.extend(lost_lease_round_with(&url, "sqlite, no cgroup", variant, &cmd, &log, dir.path(), true).err());
    }
    let log = dir.path().join("killed");
    let script = format!("set -m; ({}) & (setsid sh -c 'sleep 60' &); wait", stamping_loop(&log));
    let mut child = baton()
        .env("BATON_NO_CGROUP", "1")
        .args(["run", "--url", &url, &unique("killed-no-cgroup"), "--", "bash", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_lines(&log, 3, "no cgroup, SIGKILL");
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    failures.extend(check_quiet(&log, killed + 200_000_000, "no cgroup, SIGKILL").err());
    all_pass(&failures);
}

/// cli/README.md's `## Use` sample (what the archives ship as README.md) runs as written,
/// with this build's `baton` first on PATH and BATON_URL naming a fresh SQLite file.
#[test]
fn readme_sample_runs() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("cli/README.md");
    let sample = readme
        .split_once("## Use\n\n```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(sample, _)| sample)
        .expect("cli/README.md has a ```sh sample under ## Use");
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_baton")).parent().expect("bin dir");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = run_to_end(
        Command::new("sh")
            .args(["-e", "-c", sample])
            .current_dir(dir.path())
            .env("PATH", path)
            .env("BATON_URL", sqlite_url(dir.path(), "readme.db")),
        // The demo's three rounds take ~4 s here; the bound only catches a hang.
        Duration::from_secs(120),
        "cli/README.md's sample",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stdout: {stdout}\nstderr: {}", stderr(&out));
    let token_line = stdout.lines().find(|l| l.starts_with("token ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(token_line.ends_with(" for nightly-report"), "{token_line}");
    token_line["token ".len()..].split(' ').next().unwrap().parse::<u64>().expect("a numeric fencing token");
    for line in ["ran", "within the lease", "  holder:      none (free)"] {
        assert!(stdout.lines().any(|l| l == line), "no line {line:?} in: {stdout}");
    }
    assert!(stdout.contains("no oversell"), "the demo's locked round: {stdout}");
}
