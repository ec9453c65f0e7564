//! What only a store shared across processes can show: a SIGKILLed holder process.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use baton::{Client, LockOptions};
use tokio::time::Instant;

use super::{Store, bounded, unique};

/// A child process (this test binary, re-executed to run `child_holder`) holds a lock
/// with a 2 s watchdog lease and is SIGKILLed; this process gets the lock within
/// lease + 1 s.
pub async fn killed_holder_process_frees(store: &Store) {
    let name = unique("killed");
    let mut child = Command::new(std::env::current_exe().unwrap())
        // `child_holder` is `#[ignore]`d (it is no test of its own): `--ignored` runs it.
        .args(["--exact", "child_holder", "--ignored", "--nocapture", "--test-threads=1"])
        .env("BATON_CHILD_URL", &store.url)
        .env("BATON_CHILD_NAME", &name)
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
    let child_token = bounded("child holds the lock", Duration::from_secs(30), ready).await.unwrap();
    let child_token = child_token.expect("the child exited without holding the lock");
    let c = Client::connect(&store.url).await.unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "the child holds it");
    child.kill().unwrap();
    let killed = Instant::now();
    child.wait().unwrap();
    let g = bounded("acquire after SIGKILL", Duration::from_secs(10), c.lock(&name).acquire()).await.unwrap();
    // Lease 2 s (not renewed after the kill) + at most 1 s for the waiter to re-check.
    assert!(killed.elapsed() < Duration::from_secs(3), "took {:?}", killed.elapsed());
    assert!(g.token().get() > child_token, "token {} not above the dead child's {child_token}", g.token());
    g.release().await.unwrap();
}

/// The child side of the test above; does nothing unless started by it.
pub async fn child_holder() {
    let (Ok(url), Ok(name)) = (std::env::var("BATON_CHILD_URL"), std::env::var("BATON_CHILD_NAME")) else {
        return;
    };
    let c = Client::connect(&url).await.unwrap();
    let g = c.lock_with(&name, LockOptions::new().lease(Duration::from_secs(2))).acquire().await.unwrap();
    // libtest prints "test child_holder ... " without a newline first: match a marker.
    println!("BATON-CHILD-READY {}", g.token().get());
    // Killed by the parent long before this ends; bounded in case the parent dies.
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(g);
}

/// The URL of a server store from the environment (`scripts/services` writes it). A
/// missing variable fails the suite: a skipped store must never count as passing.
pub fn server_url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run `scripts/services start` and source its services.env (scripts/test does)")
    })
}
