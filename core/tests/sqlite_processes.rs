//! One SQLite file shared by many processes, as the cron jobs of a machine share the
//! default store: hundreds of processes contending on one name (none fails with
//! "database is locked", never two holders), and processes in other Linux time namespaces
//! (`unshare --time --boottime`, a CRIU-restored container), whose `CLOCK_BOOTTIME` is
//! offset, never seeing a live lease as expired. The other processes are this test binary
//! re-executed to run `child_process`.
#![cfg(feature = "sqlite")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use baton::{Client, LockOptions};
use baton_testkit::behaviour::{SLACK, bounded, unique};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How many processes contend in `many_processes_contend_on_one_name`: before waiters
/// retried a busy database, 300 here (2 cores) had 173 of them fail with "database is
/// locked" (500 `baton run` at once: 151–198).
const CONTENDERS: usize = 300;

/// The time-namespace offset of the other process: far above the leases below, so a
/// process that reads the offset clock sees them as long expired.
const OFFSET_S: &str = "60";

fn url_in(dir: &Path) -> String {
    format!("sqlite://{}/baton.db", dir.display())
}

/// `exe child_process` (this binary), with `env`; under `unshare --time --boottime
/// OFFSET_S` when `timens`.
fn child(timens: bool, env: &[(&str, &str)]) -> Command {
    let exe = std::env::current_exe().unwrap();
    let args = ["--exact", "child_process", "--ignored", "--nocapture", "--test-threads=1"];
    let mut cmd = if timens {
        let mut c = Command::new("unshare");
        c.args(["--time", "--boottime", OFFSET_S]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    cmd.args(args).envs(env.iter().copied()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.kill_on_drop(true);
    cmd
}

/// 300 processes take one name of one file at once, each holding it a moment. Every one
/// is granted (waiting through the others' write locks: SQLITE_BUSY is retried within a
/// wait, never returned), and no two hold at once (a marker file made with `create_new`
/// by each holder, removed before its release).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_processes_contend_on_one_name() {
    let dir = tempfile::tempdir().unwrap();
    let url = url_in(dir.path());
    let name = unique("contend");
    let d = dir.path().display().to_string();
    let mut children: Vec<Child> = (0..CONTENDERS)
        .map(|_| {
            child(
                false,
                &[
                    ("BATON_CHILD_KIND", "contend"),
                    ("BATON_CHILD_URL", &url),
                    ("BATON_CHILD_NAME", &name),
                    ("BATON_CHILD_DIR", &d),
                ],
            )
            .spawn()
            .expect("spawn a contender")
        })
        .collect();
    // Every child up and polling for the go file (its `ready-<pid>`): then they all start
    // at once, opening the file and acquiring together. 120 s: 300 processes starting
    // on 2 loaded cores.
    let ready = |dir: PathBuf| async move {
        loop {
            let n = std::fs::read_dir(&dir)
                .unwrap()
                .filter(|e| e.as_ref().is_ok_and(|e| e.file_name().to_string_lossy().starts_with("ready-")));
            if n.count() >= CONTENDERS {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    bounded("every contender started", Duration::from_secs(120), ready(dir.path().to_owned())).await;
    std::fs::write(dir.path().join("go"), b"").unwrap();
    let started = Instant::now();
    let mut outputs = tokio::task::JoinSet::new();
    for c in children.drain(..) {
        outputs.spawn(c.wait_with_output());
    }
    // Each grant is a few steps on a file every contender polls: 300 in turn took 150 s
    // here with five other builds on the 2 cores; 600 s leaves room for worse and still
    // ends a hang.
    let all = bounded("every contender done", Duration::from_secs(600), outputs.join_all()).await;
    let (mut tokens, mut errors, mut overlaps) = (Vec::new(), Vec::new(), 0);
    for out in all {
        let out = out.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().find_map(|l| l.split_once("BATON-CONTEND-").map(|(_, r)| r.to_owned()));
        match line.as_deref().and_then(|l| l.split_once(' ')) {
            Some(("OK", t)) => tokens.push(t.trim().parse::<u64>().unwrap()),
            Some(("OVERLAP", t)) => {
                overlaps += 1;
                tokens.push(t.trim().parse::<u64>().unwrap());
            }
            Some(("ERR", e)) => errors.push(e.to_owned()),
            _ => errors.push(format!("no verdict: {stdout} {}", String::from_utf8_lossy(&out.stderr))),
        }
    }
    eprintln!("{} grants in {:?}", tokens.len(), started.elapsed());
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for e in &errors {
        *kinds.entry(e.replace(&d, "DIR")).or_default() += 1;
    }
    assert!(errors.is_empty(), "{} of {CONTENDERS} contenders failed: {kinds:#?}", errors.len());
    assert_eq!(overlaps, 0, "contenders held at once");
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), CONTENDERS, "every grant has its own token");
    let c = Client::connect(&url).await.unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_some(), "free after every release");
}

/// `unshare --time` must work here (util-linux; root or CAP_SYS_ADMIN): the time-namespace
/// tests fail loudly, never skip, where it does not.
fn require_unshare() {
    let ok = std::process::Command::new("unshare")
        .args(["--time", "--boottime", OFFSET_S, "true"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "`unshare --time --boottime {OFFSET_S} true` failed: these tests need util-linux's unshare and the right to make a time namespace (root)"
    );
}

/// This process holds a lock with a 20 s lease; a process whose `CLOCK_BOOTTIME` runs
/// 60 s ahead (another time namespace) must find it held, not expired. Then the other way:
/// a holder in the namespace, SIGKILLed, frees the name after its lease, not 60 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_time_namespace_sees_live_leases() {
    require_unshare();
    let dir = tempfile::tempdir().unwrap();
    let url = url_in(dir.path());
    let name = unique("timens");
    let c = Client::connect(&url).await.unwrap();
    let g = c.lock_with(&name, LockOptions::new().lease(Duration::from_secs(20))).acquire().await.unwrap();
    let out =
        child(true, &[("BATON_CHILD_KIND", "try"), ("BATON_CHILD_URL", &url), ("BATON_CHILD_NAME", &name)]).output();
    let out = bounded("the namespaced try", Duration::from_secs(60), out).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let verdict = stdout.lines().find_map(|l| l.split_once("BATON-TRY ").map(|(_, v)| v.trim().to_owned()));
    assert_eq!(verdict.as_deref(), Some("held"), "a process 60 s ahead on CLOCK_BOOTTIME: {stdout}");
    g.release().await.unwrap();

    // A holder in the namespace: its 2 s lease, judged here, ends 2 s after its last
    // renewal, not 62 s.
    let mut holder =
        child(true, &[("BATON_CHILD_KIND", "hold"), ("BATON_CHILD_URL", &url), ("BATON_CHILD_NAME", &name)])
            .spawn()
            .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let held = async {
        while let Some(l) = lines.next_line().await.unwrap() {
            if l.contains("BATON-HOLDING") {
                return true;
            }
        }
        false
    };
    assert!(bounded("the namespaced holder", Duration::from_secs(60), held).await, "the holder exited");
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "the namespaced child holds it");
    holder.kill().await.unwrap();
    let killed = Instant::now();
    let g = bounded("acquire after the namespaced holder's kill", Duration::from_secs(30), c.lock(&name).acquire())
        .await
        .unwrap();
    // Lease 2 s + a loaded machine's slack; 62 s would mean the child's clock counted.
    assert!(killed.elapsed() < Duration::from_secs(2) + SLACK, "took {:?}", killed.elapsed());
    g.release().await.unwrap();
}

/// The other processes of the tests above; does nothing unless started by them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "helper process of the tests of this file"]
async fn child_process() {
    let (Ok(kind), Ok(url), Ok(name)) =
        (std::env::var("BATON_CHILD_KIND"), std::env::var("BATON_CHILD_URL"), std::env::var("BATON_CHILD_NAME"))
    else {
        return;
    };
    match kind.as_str() {
        "contend" => contend(&url, &name, Path::new(&std::env::var("BATON_CHILD_DIR").unwrap())).await,
        "try" => {
            let c = Client::connect(&url).await.unwrap();
            let verdict = match c.lock(&name).try_acquire().await {
                Ok(Some(_)) => "granted".to_owned(),
                Ok(None) => "held".to_owned(),
                Err(e) => format!("error {e}"),
            };
            println!("BATON-TRY {verdict}");
        }
        "hold" => {
            let c = Client::connect(&url).await.unwrap();
            let g = c.lock_with(&name, LockOptions::new().lease(Duration::from_secs(2))).acquire().await.unwrap();
            println!("BATON-HOLDING {}", g.token().get());
            // Killed by the parent long before this ends.
            tokio::time::sleep(Duration::from_secs(120)).await;
        }
        k => panic!("unknown child kind {k}"),
    }
}

/// A contender: waits for the go file, then connects, acquires (waiting as long as it
/// takes, within 540 s), holds 10 ms and releases; prints its verdict.
async fn contend(url: &str, name: &str, dir: &Path) {
    std::fs::write(dir.join(format!("ready-{}", std::process::id())), b"").unwrap();
    let go = dir.join("go");
    let t0 = Instant::now();
    while !go.exists() {
        assert!(t0.elapsed() < Duration::from_secs(180), "no go file");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let run = async {
        let c = Client::connect(url).await?;
        let g = c.lock(name).acquire().await?;
        let marker = dir.join("holder");
        let alone = std::fs::OpenOptions::new().write(true).create_new(true).open(&marker).is_ok();
        tokio::time::sleep(Duration::from_millis(10)).await;
        if alone {
            std::fs::remove_file(&marker).unwrap();
        }
        let token = g.token().get();
        g.release().await?;
        c.close().await;
        Ok::<_, baton::Error>((token, alone))
    };
    match tokio::time::timeout(Duration::from_secs(540), run).await {
        Ok(Ok((t, true))) => println!("BATON-CONTEND-OK {t}"),
        Ok(Ok((t, false))) => println!("BATON-CONTEND-OVERLAP {t}"),
        Ok(Err(e)) => println!("BATON-CONTEND-ERR {e}"),
        Err(_) => println!("BATON-CONTEND-ERR no grant within 540 s"),
    }
}
