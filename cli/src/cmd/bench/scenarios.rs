//! The scenarios `baton bench` times: acquire + release by one task and by many (each on
//! its own name, or all on one), and the hand-off between two handles.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use baton::{Client, Lock, LockGuard};
use hdrhistogram::Histogram;
use tokio::sync::oneshot;

use crate::exit::{self, Failure};

/// How long a hand-off holder waits after its waiter has started acquiring, so that the
/// waiter is parked in the store's wait (not still starting) when the release happens:
/// over etcd's JSON gateway a waiter's first attempt, its watch request and its read take
/// ~3–5 ms, and a release within them measured the waiter's start, not the hand-off.
const SETTLE: Duration = Duration::from_millis(10);

/// What a scenario measured: operation count, wall time, per-operation latency (ns), and
/// when the timed part began on the wall clock (for `benches/peers/bench-peers --cpu`, which
/// reads the processes' CPU time over that window).
pub(super) struct Sample {
    pub(super) ops: u64,
    pub(super) elapsed: Duration,
    pub(super) hist: Histogram<u64>,
    pub(super) began: SystemTime,
}

// Constant bounds: new_with_bounds fails only for low < 1, high < 2 * low or sigfig > 5.
#[allow(clippy::expect_used)]
fn histogram() -> Histogram<u64> {
    // 1 ns .. 1 h at 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static histogram bounds are valid")
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn task_failed(e: tokio::task::JoinError) -> Failure {
    Failure::new(exit::SOFTWARE, format!("a bench task failed: {e}"))
}

/// `tasks` tasks, each acquiring and releasing its own name (`shared`: all the same
/// name, each acquire waiting its turn) until `max` operations in all or `limit` time.
pub(super) async fn cycles(
    client: &Client,
    tasks: usize,
    shared: bool,
    max: u64,
    limit: Duration,
) -> Result<Sample, Failure> {
    let name = |i: usize| {
        if shared { format!("bench/contended-{tasks}") } else { format!("bench/uncontended-{tasks}/{i}") }
    };
    let locks: Vec<Lock> = (0..tasks).map(|i| client.lock(&name(i))).collect();
    // One warm-up round per name: creates store rows and connections outside the timing.
    for l in &locks {
        l.acquire().await?.release().await?;
    }
    let claimed = Arc::new(AtomicU64::new(0));
    let began = SystemTime::now();
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
        let h = done.map_err(task_failed)??;
        hist.add(&h).map_err(|e| Failure::new(exit::SOFTWARE, format!("histogram: {e}")))?;
    }
    Ok(Sample { ops: hist.len(), elapsed: started.elapsed(), hist, began })
}

/// Two handles pass one lock back and forth. Each round: a waiter task starts acquiring,
/// the holder lets it park, stamps the time and releases; the waiter stamps its grant.
pub(super) async fn handoff(client: &Client, max: u64, limit: Duration) -> Result<Sample, Failure> {
    let mut holder_lock = client.lock("bench/handoff");
    let mut waiter_lock = client.lock("bench/handoff");
    let mut held: LockGuard = holder_lock.acquire().await?;
    let mut hist = histogram();
    let began = SystemTime::now();
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
        let (granted, granted_at) = task.await.map_err(task_failed)?;
        held = granted?;
        hist.saturating_record(nanos(granted_at.saturating_duration_since(released_at)));
        // The waiter now holds: the roles swap.
        std::mem::swap(&mut holder_lock, &mut waiter_lock);
    }
    let elapsed = started.elapsed();
    held.release().await?;
    Ok(Sample { ops: hist.len(), elapsed, hist, began })
}
