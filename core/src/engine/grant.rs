//! The internal guard every public guard wraps: release, extend, drop-release.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::rt::Instant;

use super::{Held, Slot};
use crate::error::{Error, Result};
use crate::state::Released;
use crate::token::FencingToken;

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

    /// What the grant's handle takes (store, key, holder id).
    pub(crate) fn spec(&self) -> &super::Spec {
        &self.slot.spec
    }

    /// Fires the lost signal: the store said the hold is gone.
    pub(crate) fn mark_lost(&self) {
        self.held.mark_lost();
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
        if ctx.store.renew(&self.held.key, &self.held.holder, lease).await? {
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
    // Taking turns with the handle's attempts keeps the store's count and `held.holds`
    // comparable (see `Slot::counts_holds`).
    let _turn = slot.turn().await;
    let out = ctx.store.release(&held.key, &held.holder, count).await;
    match out {
        Ok(Released::StillHeld(n)) => {
            let left = held.holds.fetch_sub(count, Ordering::SeqCst).saturating_sub(count);
            if !slot.counts_holds() || n <= left {
                return Ok(Released::StillHeld(n));
            }
            // Strays beyond the guards' holds: give them back too. Failing that, they end
            // with their lease, unrenewed once no guard is left.
            let freed = matches!(
                ctx.store.release(&held.key, &held.holder, n - left).await,
                Ok(Released::Freed | Released::NotHeld)
            );
            if left > 0 {
                return Ok(Released::StillHeld(left));
            }
            if freed {
                crate::observe::released(&held.key, held.granted_at.elapsed());
            }
            slot.detach(&held);
            Ok(Released::Freed)
        }
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

    use crate::client::Client;
    use crate::lock::Lock;
    use crate::options::LockOptions;
    use crate::state::{Attempt, Mode, Request};

    /// Takes one more hold under `lock`'s holder id behind its back, as an attempt whose
    /// answer was lost with its connection (or whose give-back failed) leaves one.
    async fn stray(lock: &Lock) {
        let spec = &lock.slot.as_ref().unwrap().spec;
        let req = Request {
            holder: spec.holder.clone(),
            mode: Mode::Exclusive,
            lease_ms: 120_000,
            enqueue: false,
            queue_ttl_ms: 10_000,
            watchdog: true,
            shared: false,
            token_floor: None,
            value: None,
        };
        let got = spec.ctx.store.acquire(&spec.key, &req).await.unwrap();
        assert!(matches!(got, Attempt::Granted { .. }), "{got:?}");
    }

    fn client_url(what: &str) -> String {
        format!("memory://{what}-{}", uuid::Uuid::new_v4())
    }

    /// A stray beside a live guard: the guard's release gives it back too, instead of
    /// keeping a grant no guard has that the watchdog would renew for the handle's life.
    #[tokio::test]
    async fn a_stray_beside_a_guard_goes_with_the_guards_release() {
        let c = Client::connect(&client_url("stray-beside")).await.unwrap();
        let lock = c.lock_with("x", LockOptions::new().lease(Duration::from_secs(120)));
        let g = lock.acquire().await.unwrap();
        stray(&lock).await;
        assert_eq!(c.inspect("x").await.unwrap().holders[0].count, 2);
        g.release().await.unwrap();
        assert!(!c.inspect("x").await.unwrap().is_held(), "{:?}", c.inspect("x").await);
        assert!(c.lock("x").try_acquire().await.unwrap().is_some());
    }

    /// A re-entry of a guard's own hold is no stray: releasing one of two guards keeps it.
    #[tokio::test]
    async fn a_re_entry_is_no_stray() {
        let c = Client::connect(&client_url("re-entry")).await.unwrap();
        let lock = c.lock("x");
        let (g1, g2) = (lock.acquire().await.unwrap(), lock.acquire().await.unwrap());
        g1.release().await.unwrap();
        assert_eq!(c.inspect("x").await.unwrap().holders[0].count, 1);
        assert!(c.lock("x").try_acquire().await.unwrap().is_none());
        g2.release().await.unwrap();
        assert!(!c.inspect("x").await.unwrap().is_held());
    }

    /// A stray with no guard: the next grant trims it, so the guard's release frees the
    /// lock, also with attempts of the same handle under way beside it.
    #[tokio::test]
    async fn a_stray_under_no_guard_is_trimmed_by_the_next_grant() {
        let c = Client::connect(&client_url("stray-alone")).await.unwrap();
        let lock = c.lock("x");
        stray(&lock).await;
        let (g1, g2) = tokio::join!(lock.acquire(), lock.acquire());
        let (g1, g2) = (g1.unwrap(), g2.unwrap());
        assert_eq!(c.inspect("x").await.unwrap().holders[0].count, 2);
        g1.release().await.unwrap();
        g2.release().await.unwrap();
        assert!(!c.inspect("x").await.unwrap().is_held(), "{:?}", c.inspect("x").await);
    }

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
