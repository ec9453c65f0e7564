//! The waiters' subscriptions: a lock waiter watches its predecessor in the queue
//! (`LockSub`); `?scheme=txn`'s lock key and a latch's counter are watched as one key
//! (`KeySub`). The RwLock's and semaphore's waits are `keyed::WaitSub`.

use std::sync::Arc;
use std::time::Duration;

use crate::rt::Instant;
use async_trait::async_trait;

use super::keys::{self, LockKeys};
use super::local::Local;
use super::lock;
use super::transport::{Range, Transport, WatchStream};
use crate::error::Result;
use crate::store::Subscription;

/// Sleeps a little after a failed watch (the engine re-checks on return anyway).
pub(crate) async fn pause(until: Instant) {
    crate::rt::sleep_until(until.min(Instant::now() + Duration::from_millis(100))).await;
}

/// A lock waiter's subscription: each wait reads the queue and watches the deletion of
/// the waiter's immediate predecessor only (no herd), from the revision it read.
pub(crate) struct LockSub {
    t: Arc<dyn Transport>,
    keys: LockKeys,
    /// The waiter; `None`: any deletion under the prefix.
    holder: Option<String>,
    local: Arc<Local>,
    /// The watch of the last wait and what it watches: kept while the predecessor stays
    /// the same (a re-check after a quiet second reuses it instead of opening another).
    watch: Option<(Vec<u8>, Box<dyn WatchStream>)>,
}

impl LockSub {
    /// The subscription of the waiter `holder` on `keys` (`None`: any contender's going).
    pub(crate) fn new(t: Arc<dyn Transport>, keys: LockKeys, holder: Option<String>, local: Arc<Local>) -> LockSub {
        LockSub { t, keys, holder, local, watch: None }
    }

    /// The predecessor went (seen on the watch, or gone at the first read): counted, and
    /// when it was the head, this waiter is the head now.
    fn woken(&self, head: bool, by_event: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        self.local.wakes.fetch_add(1, Relaxed);
        if by_event {
            self.local.wake_events.fetch_add(1, Relaxed);
        }
        if let (true, Some(h)) = (head, &self.holder) {
            self.local.hint(&self.keys.prefix, h);
        }
    }

    async fn wait(&mut self, until: Instant) -> Result<()> {
        let mut head = false;
        let (range, after) = match &self.holder {
            // The engine's attempt just before this wait read the queue: watching from
            // that read's revision misses nothing, and saves a read.
            Some(h) => match self.local.last_seen(&self.keys.prefix, h) {
                Some((key, rev, is_head)) => {
                    head = is_head;
                    (Range::key(&key), rev)
                }
                None => match lock::predecessor(&*self.t, &self.keys, h).await? {
                    None => return Ok(()),
                    Some((key, rev, is_head)) => {
                        head = is_head;
                        (Range::key(&key), rev)
                    }
                },
            },
            None => {
                let mut range = Range::prefix(&self.keys.prefix);
                range.by_create = false;
                (range, 0)
            }
        };
        // A watch of the same key opened earlier holds every event since it was opened; a
        // key never comes back once deleted (lease ids are unique), so its deletion cannot
        // be older than that. A new watch starts from now (etcd serves a watch that must
        // catch up on history from a loop that runs every 100 ms, which would delay the
        // hand-off), and a read after it is confirmed covers what happened since `after`.
        let mut w = match self.watch.take() {
            Some((k, w)) if k == range.key && range.range_end.is_none() => w,
            _ => {
                let w = self.t.watch(range.clone(), None).await?;
                let now = self.t.range(range.clone()).await?;
                let gone = match &range.range_end {
                    // The predecessor, read at `after`, is gone.
                    None => now.kvs.is_empty(),
                    // Any contender: wait only while there is one.
                    Some(_) => keys::entries(&self.keys, &now).is_empty(),
                };
                let _ = after;
                if gone {
                    self.woken(head, false);
                    return Ok(());
                }
                w
            }
        };
        // Bounded by `until`; each turn is one batch of events.
        loop {
            match w.next(until).await? {
                None => {
                    if range.range_end.is_none() {
                        self.watch = Some((range.key, w));
                    }
                    return Ok(());
                }
                Some(evs) if evs.iter().any(|e| e.delete) => {
                    self.woken(head, true);
                    return Ok(());
                }
                Some(_) => {}
            }
        }
    }
}

#[async_trait]
impl Subscription for LockSub {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        if self.wait(until).await.is_err() {
            pause(until).await;
        }
        Ok(())
    }
}

/// Watches one key, one watch kept across waits: `?scheme=txn`'s lock key (a deletion
/// wakes) and a latch's counter (any write wakes).
pub(crate) struct KeySub {
    t: Arc<dyn Transport>,
    key: Vec<u8>,
    /// Only a deletion wakes.
    deletes: bool,
    /// `None` after a failure: the next wait opens another (and returns at once, so that
    /// the engine reads again).
    stream: Option<Box<dyn WatchStream>>,
}

impl KeySub {
    /// Opened (and confirmed) before the engine's next attempt, from now: that attempt
    /// reads, and every later change is on the watch.
    /// A watch refused now (too many open: the browser's connection limit) is tried again
    /// by the first wait, which then returns at once, as after any failed watch.
    pub(crate) async fn start(t: Arc<dyn Transport>, key: &[u8], deletes: bool) -> Result<KeySub> {
        let stream = t.watch(Range::key(key), None).await.ok();
        Ok(KeySub { t, key: key.to_vec(), deletes, stream })
    }
}

#[async_trait]
impl Subscription for KeySub {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        let Some(stream) = self.stream.as_mut() else {
            match self.t.watch(Range::key(&self.key), None).await {
                Ok(s) => self.stream = Some(s),
                Err(_) => pause(until).await,
            }
            return Ok(());
        };
        // Bounded by `until`: one batch of events per turn.
        loop {
            match stream.next(until).await {
                Ok(Some(evs)) if self.deletes && !evs.iter().any(|e| e.delete) => {}
                Ok(_) => return Ok(()),
                Err(_) => {
                    self.stream = None;
                    pause(until).await;
                    return Ok(());
                }
            }
        }
    }
}
