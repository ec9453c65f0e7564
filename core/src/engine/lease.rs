//! The explicit-ttl lease: a timer that `extend` moves and that fires the lost signal.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until, timeout};
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, Key};
use crate::rt::{AbortOnDrop, Rt};

/// Starts the timer of an explicit-ttl grant: when the local deadline (moved by `extend`)
/// passes, it asks the store, whose clock is authoritative and which may have seen an
/// extension from elsewhere (`PermitSemaphore::update_lease`), and fires `lost` only when
/// the hold is really gone. Watchdog grants are kept by the client's `Renewer` instead.
pub(crate) fn start_ttl(
    rt: &Rt,
    backend: Arc<dyn Backend>,
    key: Key,
    holder: String,
    token: crate::FencingToken,
    deadline: watch::Sender<Instant>,
    lost: CancellationToken,
) -> AbortOnDrop<()> {
    AbortOnDrop(rt.spawn(async move {
        let mut rx = deadline.subscribe();
        loop {
            ttl_timer(&mut rx).await;
            match lease_left(&*backend, &key, &holder).await {
                Some(left) => {
                    deadline.send_replace(Instant::now() + left);
                }
                None => break,
            }
        }
        super::mark_lost(&key, token, &lost);
    }))
}

/// What the store says is left of `holder`'s lease (`None`: gone, or no answer in time).
async fn lease_left(backend: &dyn Backend, key: &Key, holder: &str) -> Option<Duration> {
    let info = timeout(Duration::from_secs(5), backend.inspect(key)).await.ok()?.ok()?;
    let left = info.holders.iter().find(|h| h.owner == holder)?.lease_left?;
    (!left.is_zero()).then_some(left)
}

/// Returns when the (movable) deadline passes.
async fn ttl_timer(deadline: &mut watch::Receiver<Instant>) {
    loop {
        let at = *deadline.borrow_and_update();
        tokio::select! {
            _ = sleep_until(at) => {
                if *deadline.borrow() <= Instant::now() {
                    return;
                }
            }
            _ = deadline.changed() => {}
        }
    }
}
