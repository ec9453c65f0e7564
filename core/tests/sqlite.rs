//! The behaviour suite on `sqlite://` (one database file per test), plus what only a
//! store shared across processes can show: a SIGKILLed holder.
#![cfg(feature = "sqlite")]

mod behaviour;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};
use behaviour::{Store, bounded, unique};
use tokio::time::Instant;

fn store() -> Store {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/baton.db", dir.path().display());
    Store { url, keep: Some(Box::new(dir)) }
}

behaviour_suite!(crate::store);

/// A child process (this test binary, re-executed) holds a lock with a 2 s watchdog lease
/// and is SIGKILLed; another process's client gets the lock within lease + 1 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_holder_process_frees_within_lease() {
    let store = store();
    let name = unique("killed");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_holder", "--nocapture", "--test-threads=1"])
        .env("BATON_CHILD_URL", &store.url)
        .env("BATON_CHILD_NAME", &name)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).any(|l| l.contains("BATON-CHILD-READY"))
    });
    assert!(bounded("child holds the lock", Duration::from_secs(30), ready).await.unwrap());
    let c = Client::connect(&store.url).await.unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "the child holds it");
    child.kill().unwrap();
    let killed = Instant::now();
    child.wait().unwrap();
    let g = bounded("acquire after SIGKILL", Duration::from_secs(10), c.lock(&name).acquire()).await.unwrap();
    // Lease 2 s (not renewed after the kill) + at most 1 s for the waiter to re-check.
    assert!(killed.elapsed() < Duration::from_secs(3), "took {:?}", killed.elapsed());
    g.release().await.unwrap();
}

/// The child side of the test above; does nothing unless started by it.
#[tokio::test]
async fn child_holder() {
    let (Ok(url), Ok(name)) = (std::env::var("BATON_CHILD_URL"), std::env::var("BATON_CHILD_NAME")) else {
        return;
    };
    let c = Client::connect(&url).await.unwrap();
    let g = c.lock_with(&name, LockOptions::new().lease(Duration::from_secs(2))).acquire().await.unwrap();
    // libtest prints "test child_holder ... " without a newline first: match a marker.
    println!("BATON-CHILD-READY");
    // Killed by the parent long before this ends; bounded in case the parent dies.
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(g);
}

/// Tokens survive closing every client and reopening the file.
#[tokio::test]
async fn tokens_survive_reopen() {
    let store = store();
    let name = unique("reopen");
    let a = Client::connect(&store.url).await.unwrap();
    let t1 = a.lock(&name).acquire().await.unwrap().token();
    a.close().await;
    let b = Client::connect(&store.url).await.unwrap();
    let g = b.lock(&name).acquire().await.unwrap();
    assert!(g.token() > t1);
    g.release().await.unwrap();
}

/// A database path that cannot be created is an error, not a panic, and names the path.
#[tokio::test]
async fn unwritable_path() {
    for url in ["sqlite:///proc/baton-nope/x.db", "sqlite:///nonexistent-dir-baton/sub/x.db"] {
        let e = Client::connect(url).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        assert!(e.to_string().contains("x.db"), "{e}");
    }
    let e = Client::connect("sqlite://").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{e}");
}
