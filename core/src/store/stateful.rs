//! Adapts a store that can run "read state, decide, write back" in one transaction
//! (`StateStore`) to the `Store` trait, using the rules in `crate::state` — written once
//! for memory, SQLite and the other SQL stores.

use std::time::Duration;

use async_trait::async_trait;

use super::{Store, Subscription};
use crate::error::Result;
use crate::inspect::Inspection;
use crate::key::Key;
use crate::state::{self, Attempt, KeyState, Released, Request};

/// A decision run inside a store's transaction: `f(state, now_us)`, the store's clock in
/// µs. A store that detects
/// conflicts instead of locking (etcd's txn on a mod revision) runs it again on a fresh
/// read, so it is `Fn`.
pub(crate) type Op<R> = Box<dyn for<'a> Fn(&'a mut KeyState, u64) -> R + Send + Sync>;

/// One atomic read-modify-write of a key's state, on the store's clock.
#[async_trait]
pub(crate) trait StateStore: Send + Sync + std::fmt::Debug + 'static {
    /// Runs `f(state, now_us)` atomically. The store writes the state back when it differs
    /// from what was read, and wakes subscribers when [`state::frees`] says the change may
    /// let a waiter in (queue refreshes and renewals wake nobody, or waiters would wake
    /// each other in a loop).
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R>;

    /// Reads the state and the store's clock in µs, without writing.
    async fn read(&self, key: &Key) -> Result<(KeyState, u64)>;

    /// Listens for changes of `key`.
    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>>;

    async fn close(&self) {}

    /// The store's fenced writes, where it has them.
    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        None
    }
}

fn lease_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[async_trait]
impl<S: StateStore> Store for S {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        let (req, name) = (req.clone(), key.name.clone());
        self.update(key, Box::new(move |s, now| state::acquire(s, &name, &req, now))).await?
    }

    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        let holder = holder.to_owned();
        let ms = lease_ms(lease);
        self.update(key, Box::new(move |s, now| state::renew(s, &holder, ms, now))).await
    }

    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        let holder = holder.to_owned();
        self.update(key, Box::new(move |s, now| state::release(s, &holder, count, now))).await?
    }

    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()> {
        let holder = holder.to_owned();
        self.update(key, Box::new(move |s, _| state::leave_queue(s, &holder))).await.map(drop)
    }

    async fn proclaim(&self, key: &Key, holder: &str, value: &str) -> Result<bool> {
        let (holder, value) = (holder.to_owned(), value.to_owned());
        self.update(key, Box::new(move |s, now| state::proclaim(s, &holder, &value, now))).await
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        StateStore::subscribe(self, key).await
    }

    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        StateStore::fence(self)
    }

    async fn inspect(&self, key: &Key) -> Result<Inspection> {
        let (s, now_us) = self.read(key).await?;
        Ok(Inspection::from_state(key, &state::inspect(&s, now_us), now_us / 1000))
    }

    async fn latch_try_set(&self, key: &Key, count: u64) -> Result<bool> {
        self.update(
            key,
            Box::new(move |s, _| {
                let set = s.count == 0;
                if set {
                    s.count = count;
                }
                set
            }),
        )
        .await
    }

    async fn latch_count_down(&self, key: &Key) -> Result<u64> {
        self.update(
            key,
            Box::new(|s, _| {
                s.count = s.count.saturating_sub(1);
                s.count
            }),
        )
        .await
    }

    async fn latch_count(&self, key: &Key) -> Result<u64> {
        Ok(self.read(key).await?.0.count)
    }

    async fn close(&self) {
        StateStore::close(self).await
    }
}
