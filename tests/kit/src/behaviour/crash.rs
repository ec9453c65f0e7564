//! What only a store shared across processes can show: a SIGKILLed holder process, and a
//! holder process stopped (SIGSTOP) past its lease whose late fenced write must be refused.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::{Client, FencingToken, LockOptions};
use tokio::time::Instant;

use super::{SLACK, Store, bounded, unique};

/// The lease of a child holder's grant (a watchdog lease: renewed while the child runs).
pub const CHILD_LEASE: Duration = Duration::from_secs(2);

/// A child process (this test binary, re-executed to run `child_holder`) holds a lock
/// with a 2 s watchdog lease and is SIGKILLed; this process gets the lock within
/// lease + `SLACK`.
pub async fn killed_holder_process_frees(store: &Store) {
    let name = unique("killed");
    let (mut child, child_token) = spawn_holder(&store.url, &name, "lock").await;
    let c = Client::connect(&store.url).await.unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "the child holds it");
    child.kill().unwrap();
    let killed = Instant::now();
    child.wait().unwrap();
    let g = bounded("acquire after SIGKILL", Duration::from_secs(10), c.lock(&name).acquire()).await.unwrap();
    // Lease 2 s (not renewed after the kill) + the waiter's re-check on a loaded machine.
    assert!(killed.elapsed() < CHILD_LEASE + SLACK, "took {:?}", killed.elapsed());
    assert!(g.token().get() > child_token, "token {} not above the dead child's {child_token}", g.token());
    g.release().await.unwrap();
}

/// Starts a child process (this test binary, re-executed to run `child_holder`) that takes
/// `name` (`kind`: `lock`, or `permit` for a permit of a PermitSemaphore of 1) with a 2 s
/// watchdog lease and keeps it until killed; returns it and its token once it holds.
pub async fn spawn_holder(url: &str, name: &str, kind: &str) -> (Child, u64) {
    let h = spawn_holder_process(url, name, kind, &[]).await;
    (h.child, h.token)
}

/// A child holder process of [`spawn_holder_process`], once it holds.
pub struct HolderProcess {
    pub child: Child,
    /// The token of its grant.
    pub token: u64,
    /// The wall-clock time just before it sent its acquire: the store counts the lease
    /// from the request's arrival, later, so no grant to anyone else is due before
    /// `sent + CHILD_LEASE` (the store's own margins aside).
    pub sent: SystemTime,
    lines: Lines<BufReader<ChildStdout>>,
}

impl HolderProcess {
    /// Sends `signal` (`STOP`, `CONT`, `KILL`) to the child.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success();
        assert!(ok, "kill -{signal} {pid}");
    }

    /// Continues a `paused` child (SIGCONT), tells it to go on, and returns whether the
    /// fenced write it then makes with its old token was taken (bounded: 20 s).
    pub async fn resume_and_write(mut self) -> bool {
        self.signal("CONT");
        let mut stdin = self.child.stdin.take().expect("the child's stdin");
        stdin.write_all(b"go\n").unwrap();
        drop(stdin);
        let lines = self.lines;
        let verdict = tokio::task::spawn_blocking(move || {
            lines
                .map_while(Result::ok)
                .find_map(|l| l.split_once("BATON-CHILD-WROTE ").map(|(_, v)| v.trim() == "accepted"))
        });
        let verdict = bounded("the paused child's write", Duration::from_secs(20), verdict).await.unwrap();
        let _ = self.child.kill();
        let _ = self.child.wait();
        verdict.expect("the paused child exited without writing")
    }
}

/// [`spawn_holder`] with more of the child's environment (`BATON_CHILD_FENCE_KEY`,
/// `BATON_CHILD_FENCE_URL` for the `paused` kind), the time it sent its acquire, and its
/// stdout kept for what it says later. Kind `paused`: a lock, then, once the parent has
/// stopped and continued it and written a line on its stdin
/// ([`HolderProcess::resume_and_write`]), a fenced write of its old token under
/// `BATON_CHILD_FENCE_KEY` on `BATON_CHILD_FENCE_URL` (default: the lock's store).
pub async fn spawn_holder_process(url: &str, name: &str, kind: &str, env: &[(&str, &str)]) -> HolderProcess {
    let mut child = Command::new(std::env::current_exe().unwrap())
        // `child_holder` is `#[ignore]`d (it is no test of its own): `--ignored` runs it.
        .args(["--exact", &child_test("child_holder"), "--ignored", "--nocapture", "--test-threads=1"])
        .env("BATON_CHILD_URL", url)
        .env("BATON_CHILD_NAME", name)
        .env("BATON_CHILD_KIND", kind)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let ready = lines.by_ref().map_while(Result::ok).find_map(|l| {
            let (_, rest) = l.split_once("BATON-CHILD-READY ")?;
            let (token, sent) = rest.trim().split_once(' ')?;
            Some((token.parse::<u64>().ok()?, UNIX_EPOCH + Duration::from_micros(sent.parse().ok()?)))
        });
        (ready, lines)
    });
    let (ready, lines) = bounded("child holds", Duration::from_secs(30), ready).await.unwrap();
    let (token, sent) = ready.expect("the child exited without holding");
    HolderProcess { child, token, sent, lines }
}

/// The full name of the ignored helper test `leaf` (`child_holder`) in this test binary,
/// to re-execute it with `--exact`: a binary of many modules has one in each module that
/// runs a cross-process check, all alike; the one nearest the running test is taken.
pub fn child_test(leaf: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--list", "--ignored"])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let me = std::thread::current().name().unwrap_or_default().to_owned();
    let shared = |t: &str| t.split("::").zip(me.split("::")).take_while(|(a, b)| a == b).count();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .filter(|t| *t == leaf || t.ends_with(&format!("::{leaf}")))
        .max_by_key(|t| shared(t))
        .unwrap_or_else(|| panic!("no ignored test `{leaf}` in this binary"))
        .to_owned()
}

/// The child side of the tests above; does nothing unless started by them.
pub async fn child_holder() {
    let (Ok(url), Ok(name)) = (std::env::var("BATON_CHILD_URL"), std::env::var("BATON_CHILD_NAME")) else {
        return;
    };
    let kind = std::env::var("BATON_CHILD_KIND").unwrap_or_default();
    let c = Client::connect(&url).await.unwrap();
    let opts = LockOptions::new().lease(CHILD_LEASE);
    let sent = SystemTime::now();
    // `BATON_CHILD_KIND=permit`: a PermitSemaphore permit (of 1) instead of a lock.
    let token = if kind == "permit" {
        let p = c.permit_semaphore_with(&name, 1, opts).acquire().await.unwrap();
        let t = p.token().get();
        std::mem::forget(p);
        t
    } else {
        let g = c.lock_with(&name, opts).acquire().await.unwrap();
        let t = g.token().get();
        std::mem::forget(g);
        t
    };
    // libtest prints "test child_holder ... " without a newline first: match a marker.
    println!("BATON-CHILD-READY {token} {}", sent.duration_since(UNIX_EPOCH).unwrap().as_micros());
    if kind == "paused" {
        // Stopped here past the lease; the parent's line comes once it continued us.
        let read = tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new()));
        let _ = read.await;
        let key = std::env::var("BATON_CHILD_FENCE_KEY").expect("BATON_CHILD_FENCE_KEY");
        let fence = match std::env::var("BATON_CHILD_FENCE_URL") {
            Ok(u) => Client::connect(&u).await.unwrap().fence(),
            Err(_) => c.fence(),
        };
        let wrote = fence.write(&key, "paused holder", FencingToken::new(token)).await.unwrap();
        println!("BATON-CHILD-WROTE {}", if wrote { "accepted" } else { "rejected" });
        return;
    }
    // Killed by the parent long before this ends; bounded in case the parent dies.
    tokio::time::sleep(Duration::from_secs(120)).await;
}

/// The URL of a server store from the environment (`scripts/services` writes it). A
/// missing variable fails the suite: a skipped store must never count as passing.
pub fn server_url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run `scripts/services start` and source its services.env (scripts/test does)")
    })
}
