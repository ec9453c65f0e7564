//! In-process wake-ups shared by every client of one store in this process, and the
//! version-polling subscription for stores that cannot announce changes to other
//! processes (SQLite, MySQL).

use crate::sync::{LockExt, Registry};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::watch;

use crate::key::Key;

/// Wake-ups of one store (by identity: a file path, a server address and database).
#[derive(Debug, Default)]
pub(crate) struct Wakes {
    keys: Mutex<HashMap<Key, watch::Sender<u64>>>,
    /// Writers of this process queue here instead of inside the store's own lock waits
    /// (SQLite's busy handler sleeps up to 100 ms, which turned collisions into spikes).
    #[cfg(feature = "sqlite")]
    pub(crate) write: tokio::sync::Mutex<()>,
}

impl Wakes {
    /// The shared wake-ups of the store called `id`.
    pub(crate) fn for_store(id: &str) -> Arc<Wakes> {
        static REG: OnceLock<Registry<String, Wakes>> = OnceLock::new();
        REG.get_or_init(Registry::default).get_or_insert_with(id.to_owned(), Wakes::default)
    }

    fn sender<R>(&self, key: &Key, f: impl FnOnce(&watch::Sender<u64>) -> R) -> R {
        let mut keys = self.keys.locked();
        f(keys.entry(key.clone()).or_insert_with(|| watch::Sender::new(0)))
    }

    /// Wakes this process's waiters on `key`.
    pub(crate) fn notify(&self, key: &Key) {
        self.sender(key, |s| s.send_modify(|v| *v += 1));
    }

    /// Listens for [`Wakes::notify`] on `key`.
    pub(crate) fn subscribe(&self, key: &Key) -> watch::Receiver<u64> {
        self.sender(key, watch::Sender::subscribe)
    }
}

#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub(crate) use poll::{PollSub, VersionSource};

/// Version polling, for stores with no notifications to other processes.
#[cfg(any(feature = "sqlite", feature = "mysql"))]
mod poll {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::rt::{Instant, sleep_until};
    use async_trait::async_trait;
    use tokio::sync::watch;

    use super::Wakes;
    use crate::error::Result;
    use crate::key::Key;
    use crate::store::Subscription;
    use crate::store::backoff::Backoff;

    /// Reads a key's change counter (bumped by every change that may let a waiter in).
    #[async_trait]
    pub(crate) trait VersionSource: Send + Sync + 'static {
        async fn version(&self, key: &Key) -> Result<i64>;
    }

    /// Polling bounds for cross-process waiters: the first re-check comes fast (a release
    /// usually follows soon), later ones at most every 50 ms.
    const POLL_MIN: Duration = Duration::from_millis(2);
    const POLL_MAX: Duration = Duration::from_millis(50);

    /// Wakes on an in-process notification at once, and on another process's change by
    /// polling the key's version with capped, jittered backoff.
    pub(crate) struct PollSub<S> {
        source: Arc<S>,
        key: Key,
        seen: i64,
        rx: watch::Receiver<u64>,
        backoff: Backoff,
    }

    impl<S: VersionSource> PollSub<S> {
        pub(crate) async fn start(source: Arc<S>, wakes: &Wakes, key: &Key) -> Result<PollSub<S>> {
            let rx = wakes.subscribe(key);
            let seen = source.version(key).await?;
            Ok(PollSub { source, key: key.clone(), seen, rx, backoff: Backoff::new(POLL_MIN, POLL_MAX) })
        }
    }

    #[async_trait]
    impl<S: VersionSource> Subscription for PollSub<S> {
        async fn changed(&mut self, until: Instant) -> Result<()> {
            loop {
                let v = self.source.version(&self.key).await?;
                if v != self.seen {
                    self.seen = v;
                    self.backoff.reset();
                    return Ok(());
                }
                let wake = until.min(Instant::now() + self.backoff.next_delay());
                tokio::select! {
                    r = self.rx.changed() => {
                        if r.is_ok() {
                            self.backoff.reset();
                            return Ok(());
                        }
                        // The sender lives as long as the store: fall back to polling.
                        sleep_until(wake).await;
                    }
                    _ = sleep_until(wake) => {}
                }
                if Instant::now() >= until {
                    return Ok(());
                }
            }
        }
    }
}
