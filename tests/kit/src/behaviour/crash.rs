//! What only a store shared across processes can show: a SIGKILLed holder process.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use baton::{Client, LockOptions};
use tokio::time::Instant;

use super::{SLACK, Store, bounded, unique};

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
    assert!(killed.elapsed() < Duration::from_secs(2) + SLACK, "took {:?}", killed.elapsed());
    assert!(g.token().get() > child_token, "token {} not above the dead child's {child_token}", g.token());
    g.release().await.unwrap();
}

/// Starts a child process (this test binary, re-executed to run `child_holder`) that takes
/// `name` (`kind`: `lock`, or `permit` for a permit of a PermitSemaphore of 1) with a 2 s
/// watchdog lease and keeps it until killed; returns it and its token once it holds.
pub async fn spawn_holder(url: &str, name: &str, kind: &str) -> (std::process::Child, u64) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        // `child_holder` is `#[ignore]`d (it is no test of its own): `--ignored` runs it.
        .args(["--exact", "child_holder", "--ignored", "--nocapture", "--test-threads=1"])
        .env("BATON_CHILD_URL", url)
        .env("BATON_CHILD_NAME", name)
        .env("BATON_CHILD_KIND", kind)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).find_map(|l| {
            let (_, token) = l.split_once("BATON-CHILD-READY ")?;
            token.trim().parse::<u64>().ok()
        })
    });
    let token = bounded("child holds", Duration::from_secs(30), ready).await.unwrap();
    (child, token.expect("the child exited without holding"))
}

/// The child side of the tests above; does nothing unless started by it.
pub async fn child_holder() {
    let (Ok(url), Ok(name)) = (std::env::var("BATON_CHILD_URL"), std::env::var("BATON_CHILD_NAME")) else {
        return;
    };
    let c = Client::connect(&url).await.unwrap();
    let opts = LockOptions::new().lease(Duration::from_secs(2));
    // `BATON_CHILD_KIND=permit`: a PermitSemaphore permit (of 1) instead of a lock.
    let token = if std::env::var("BATON_CHILD_KIND").as_deref() == Ok("permit") {
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
    println!("BATON-CHILD-READY {token}");
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
