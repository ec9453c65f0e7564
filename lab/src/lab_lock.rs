//! The steps of one scheme's client that the harness drives, each a separate store
//! command so that faults land between them.

use std::time::Duration;

use async_trait::async_trait;

use baton::{FencingToken, Result};

/// One client of one scheme on one lock name: the steps the harness drives.
#[async_trait]
pub trait LabLock: Send {
    /// One attempt, never waiting: `true` when this client now believes it holds the lock
    /// for `ttl` (schemes without expiry ignore it).
    async fn acquire(&mut self, ttl: Duration) -> Result<bool>;

    /// Releases as the scheme does: `true` when the scheme's release went through (it
    /// believed the lock was its own), `false` when the scheme refused (not its lock).
    async fn release(&mut self) -> Result<bool>;

    /// The fencing token of the current grant, for schemes that have one.
    fn token(&self) -> Option<FencingToken>;

    /// The holder dies where it stands: no release, no further step, nothing renewed.
    fn crash(self: Box<Self>) {}
}
