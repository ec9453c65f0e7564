//! The explicit-ttl lease: a timer that `extend` moves and that fires the lost signal.

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::rt::{AbortOnDrop, Rt};

/// Starts the timer of an explicit-ttl grant: fires `lost` when the deadline (moved by
/// `extend`) passes. Watchdog grants are kept by the client's `Renewer` instead.
pub(crate) fn start_ttl(rt: &Rt, deadline: &watch::Sender<Instant>, lost: CancellationToken) -> AbortOnDrop<()> {
    let rx = deadline.subscribe();
    AbortOnDrop(rt.spawn(async move {
        ttl_timer(rx).await;
        lost.cancel();
    }))
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
