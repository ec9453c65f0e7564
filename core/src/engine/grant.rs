//! The internal guard every public guard wraps: release, extend, drop-release.

use std::sync::Arc;
use std::time::Duration;

use crate::rt::Instant;

use super::{Held, Slot};
use crate::FencingToken;
use crate::error::{Error, Result};
use crate::state::Released;

/// How long the background release of a dropped guard may take before it gives up (the
/// lease then ends on its own).
const DROP_RELEASE_TIMEOUT: Duration = Duration::from_secs(10);

/// One acquisition: `count` holds of the slot's holder id (1 for locks, k for permits).
#[derive(Debug)]
pub(crate) struct Grant {
    slot: Arc<Slot>,
    held: Arc<Held>,
    count: u32,
    done: bool,
}

impl Grant {
    pub(crate) fn new(slot: Arc<Slot>, held: Arc<Held>, count: u32) -> Grant {
        Grant { slot, held, count, done: false }
    }

    pub(crate) fn token(&self) -> FencingToken {
        self.held.token
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    pub(crate) fn holder(&self) -> &str {
        &self.held.holder
    }

    pub(crate) fn lost_token(&self) -> &tokio_util::sync::CancellationToken {
        &self.held.lost
    }

    /// Time left until the local end of the lease (zero once it passed).
    pub(crate) fn lease_remaining(&self) -> Duration {
        self.held.deadline().saturating_duration_since(Instant::now())
    }

    /// Releases the whole grant.
    pub(crate) async fn release(mut self) -> Result<()> {
        if self.done {
            return Err(Error::not_held(format!("{} was already released in full", self.held.key)));
        }
        self.done = true;
        release(self.slot.clone(), self.held.clone(), self.count).await.map(drop)
    }

    /// Releases `n` of the grant's holds, keeping the rest (semaphore permits).
    pub(crate) async fn release_some(&mut self, n: u32) -> Result<()> {
        if n == 0 || n > self.count {
            return Err(Error::invalid_argument(format!(
                "cannot release {n} permits: this permit holds {}",
                self.count
            )));
        }
        if n == self.count {
            self.done = true;
        }
        release(self.slot.clone(), self.held.clone(), n).await?;
        self.count -= n;
        Ok(())
    }

    /// Sets the lease to `lease` from now.
    pub(crate) async fn extend(&self, lease: Duration) -> Result<()> {
        let lease = crate::duration::validate_lease("lease extension", lease)?;
        let ctx = &self.slot.spec.ctx;
        ctx.check_open()?;
        if self.held.lost.is_cancelled() {
            return Err(lost(&self.held));
        }
        let sent = Instant::now();
        if ctx.backend.renew(&self.held.key, &self.held.holder, lease).await? {
            self.held.extended(sent, lease);
            // A shorter lease than before: the keeper must look earlier than it planned.
            self.held.renewer.look_by(self.held.deadline());
            Ok(())
        } else {
            self.held.mark_lost();
            Err(lost(&self.held))
        }
    }
}

fn lost(held: &Held) -> Error {
    Error::lock_lost(format!("the lease on {} (token {}) was lost", held.key, held.token))
}

/// Releases `count` holds; `LockLost` when the lease was already gone.
async fn release(slot: Arc<Slot>, held: Arc<Held>, count: u32) -> Result<Released> {
    let ctx = slot.spec.ctx.clone();
    if held.lost.is_cancelled() {
        // Whatever the store holds under this holder id now is not ours to release.
        slot.detach(&held);
        return Err(if ctx.is_closed() { Error::closed() } else { lost(&held) });
    }
    ctx.check_open()?;
    let out = ctx.backend.release(&held.key, &held.holder, count).await;
    match out {
        Ok(Released::StillHeld(n)) => Ok(Released::StillHeld(n)),
        Ok(Released::Freed) => {
            crate::observe::released(&held.key, held.granted_at.elapsed());
            slot.detach(&held);
            Ok(Released::Freed)
        }
        Ok(Released::NotHeld) => {
            held.mark_lost();
            slot.detach(&held);
            Err(lost(&held))
        }
        Err(e) => {
            // Unknown outcome: stop renewing so the lease ends on its own.
            slot.detach(&held);
            Err(e)
        }
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (slot, held, count) = (self.slot.clone(), self.held.clone(), self.count);
        let rt = slot.spec.ctx.rt.clone();
        rt.spawn(async move {
            let _ = crate::rt::timeout(DROP_RELEASE_TIMEOUT, release(slot, held, count)).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{Client, LockOptions};

    /// A guard may be dropped on a thread with no runtime after its client's runtime is
    /// gone (a GC finalizer in a binding): no panic, and the lease still ends on its own.
    #[test]
    fn drop_after_runtime_shutdown_does_not_panic() {
        let url = format!("memory://drop-after-shutdown-{}", uuid::Uuid::new_v4());
        let rt2 = tokio::runtime::Runtime::new().unwrap();
        // Keeps the named memory store alive while the first client goes away.
        let observer = rt2.block_on(Client::connect(&url)).unwrap();
        let rt1 = tokio::runtime::Runtime::new().unwrap();
        let (client, guard) = rt1.block_on(async {
            let c = Client::connect(&url).await.unwrap();
            let opts = LockOptions::new().lease(Duration::from_millis(600));
            let g = c.lock_with("x", opts).acquire().await.unwrap();
            (c, g)
        });
        drop(rt1);
        drop(guard);
        drop(client);
        rt2.block_on(async {
            assert!(observer.inspect("x").await.unwrap().is_held(), "the lease outlives the runtime");
            let c = Client::connect(&url).await.unwrap();
            // Bound: the 600 ms lease plus generous slack for a loaded 2-core machine.
            let g = c.lock("x").acquire_timeout(Duration::from_secs(5)).await.unwrap();
            g.release().await.unwrap();
        });
    }
}
