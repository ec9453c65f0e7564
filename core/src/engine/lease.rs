//! Keeping a grant alive: the watchdog (renew every period) or an explicit ttl (a timer
//! that `extend` moves), and the lost signal both end in.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until, timeout};
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, Key};
use crate::options::Lease;
use crate::rt::{AbortOnDrop, Rt};

/// Starts the keeper of one grant. `deadline` is the local, conservative end of the lease
/// (measured from before the request that granted it); the keeper moves it on every
/// renewal and fires `lost` when it passes without one.
pub(crate) fn start(
    rt: &Rt,
    backend: Arc<dyn Backend>,
    key: Key,
    holder: String,
    lease: Lease,
    deadline: Arc<watch::Sender<Instant>>,
    lost: CancellationToken,
) -> AbortOnDrop<()> {
    AbortOnDrop(rt.spawn(async move {
        match lease {
            Lease::Watchdog { lease, renew } => {
                watchdog(&*backend, &key, &holder, lease, renew, &deadline).await;
            }
            Lease::Ttl(_) => ttl_timer(deadline.subscribe()).await,
        }
        lost.cancel();
    }))
}

/// Renews every `period`; returns when the lease is gone (store said so, or the local
/// deadline passed while renewals kept failing).
async fn watchdog(
    backend: &dyn Backend,
    key: &Key,
    holder: &str,
    lease: Duration,
    period: Duration,
    deadline: &watch::Sender<Instant>,
) {
    let mut next = Instant::now() + period;
    loop {
        sleep_until(next).await;
        let sent = Instant::now();
        // A renewal that hangs past the lease is as good as a failed one.
        match timeout(lease, backend.renew(key, holder, lease)).await {
            Ok(Ok(true)) => {
                deadline.send_replace(sent + lease);
                next = sent + period;
            }
            Ok(Ok(false)) => return,
            Ok(Err(_)) | Err(_) => {
                if Instant::now() >= *deadline.borrow() {
                    return;
                }
                // Retry sooner than a full period, still bounded.
                next = Instant::now() + (period / 4).max(Duration::from_millis(50));
            }
        }
    }
}

/// Fires when the (movable) deadline passes.
async fn ttl_timer(mut deadline: watch::Receiver<Instant>) {
    loop {
        let at = *deadline.borrow_and_update();
        tokio::select! {
            _ = sleep_until(at) => {
                if *deadline.borrow() <= Instant::now() {
                    return;
                }
            }
            changed = deadline.changed() => {
                if changed.is_err() {
                    // Every sender is gone: the grant was released; nothing to signal.
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}
