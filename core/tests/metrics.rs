//! With the `metrics` feature, grants, waits, holds, timeouts and losses are recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

use std::time::Duration;

use baton::{Client, LockOptions};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_grants_timeouts_holds_and_losses() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("the only recorder of this test binary");

    let client = Client::connect("memory://metrics-test").await.unwrap();
    let g = client.lock("m").acquire().await.unwrap();
    assert!(client.lock("m").acquire_timeout(Duration::from_millis(50)).await.is_err());
    g.release().await.unwrap();
    let short = client.lock_with("m", LockOptions::new().ttl(Duration::from_millis(200))).acquire().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), short.lost()).await.expect("ttl lease lost");

    let mut seen = std::collections::HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let n = match value {
            DebugValue::Counter(n) => n,
            DebugValue::Histogram(v) => v.len() as u64,
            DebugValue::Gauge(_) => continue,
        };
        *seen.entry(key.key().name().to_owned()).or_insert(0) += n;
    }
    assert_eq!(seen.get("baton_acquired_total"), Some(&2), "{seen:?}");
    assert_eq!(seen.get("baton_wait_seconds"), Some(&2), "{seen:?}");
    assert_eq!(seen.get("baton_acquire_timeouts_total"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("baton_hold_seconds"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("baton_leases_lost_total"), Some(&1), "{seen:?}");
}
