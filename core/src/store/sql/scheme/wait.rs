//! How the schemes' waiters learn of a release. In this process a release wakes **one**
//! waiter of the name (a table or version row has no queue, and waking every waiter made
//! each hand-off cost a read per waiter); waiters in other processes, and any waiter
//! whose wake-up went to a waiter that left, poll the scheme's version with backoff that
//! keeps growing to its cap (a busy name changes at every grant: starting over at each
//! change kept every waiter polling every few milliseconds); the engine also re-checks
//! every second.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

use super::LockScheme;
use crate::error::Result;
use crate::store::Subscription;
use crate::store::backoff::Backoff;
use crate::sync::Registry;

const POLL_MIN: Duration = Duration::from_millis(5);
const POLL_MAX: Duration = Duration::from_millis(100);

/// The in-process wake-up of `name` on the store `store`.
pub(crate) fn handoff(store: &str, name: &str) -> Arc<Notify> {
    static REG: OnceLock<Registry<String, Notify>> = OnceLock::new();
    REG.get_or_init(Registry::default).get_or_insert_with(format!("{store}\0{name}"), Notify::new)
}

pub(crate) struct Waiter {
    scheme: Arc<dyn LockScheme>,
    name: String,
    wake: Arc<Notify>,
    seen: i64,
    backoff: Backoff,
}

impl Waiter {
    pub(crate) async fn start(scheme: Arc<dyn LockScheme>, store: &str, name: &str) -> Result<Waiter> {
        let wake = handoff(store, name);
        let seen = scheme.version(name).await?;
        Ok(Waiter { scheme, name: name.to_owned(), wake, seen, backoff: Backoff::new(POLL_MIN, POLL_MAX) })
    }
}

#[async_trait]
impl Subscription for Waiter {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        loop {
            let at = until.min(Instant::now() + self.backoff.next_delay());
            tokio::select! {
                () = self.wake.notified() => return Ok(()),
                () = sleep_until(at) => {}
            }
            if Instant::now() >= until {
                return Ok(());
            }
            let v = self.scheme.version(&self.name).await?;
            if v != self.seen {
                self.seen = v;
                return Ok(());
            }
        }
    }
}
