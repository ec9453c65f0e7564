//! The `redisson`, `redlock`, `zookeeper` and SQL rows: baton's own locks, driven through
//! the public [`Client`] API exactly as an application would: Redisson's hash lock on one
//! node, Redlock over independent nodes, ZooKeeper's queue, and every SQL lock scheme.

use std::time::Duration;

use async_trait::async_trait;

use crate::lab_lock::LabLock;
use baton::FencingToken;
use baton::{Client, LockGuard, LockOptions};
use baton::{ErrorKind, Result};

/// A baton [`Client`] on `redis://` (Redisson's `RLock` hash: field `uuid:n` → hold count,
/// one Lua script per step, expiry on the server's clock) or `redlock://` (the same lock
/// on a quorum of independent nodes), each grant with a fencing token. The lab holds with
/// an explicit ttl (`LockOptions::ttl`) so that a paused holder's lease runs out as the
/// hand-written schemes' do; applications get a watchdog lease by default.
///
/// **Guarantees:** one holder at a time while holders keep their lease; a dead holder's
/// lease ends; a release never frees another owner's lock (a late one fails with
/// `LockLost`); every grant carries a token larger than every earlier one, so a fenced
/// resource rejects a paused ex-holder's writes (fencing, as Hazelcast's
/// FencedLock). `redlock://` also survives the loss of a minority of its nodes.
///
/// **Breaks:** `redis://` lives on one node (or one master): a restart without
/// persistence or a replica promoted before the grant reached it hands the lock out again
/// — fencing still rejects the stale holder's writes when the
/// resource keeps its own highest token. `redlock://` rests on bounded clock drift and on
/// restarted nodes staying down for a ttl (a node that restarts empty at once can join a
/// second quorum for a lock it had granted).
///
/// On `sqlite://`, `postgres://` and `mysql://` (baton's own state rows, or
/// `?scheme=table|for-update|optimistic|advisory`) the same guarantees hold on one
/// database: leases on the database's clock or the session's idle limit, owner-checked
/// releases, tokens from a counter that outlives every hold. One server is one node:
/// while it is down nobody locks, and a hold kept by a session (`for-update`,
/// `advisory`) dies with a restart (docs/sql-schemes.md).
pub struct BatonLock {
    client: Client,
    name: String,
    guard: Option<LockGuard>,
}

impl BatonLock {
    pub(crate) async fn open(url: &str, name: &str) -> Result<BatonLock> {
        Ok(BatonLock { client: Client::connect(url).await?, name: name.to_owned(), guard: None })
    }
}

#[async_trait]
impl LabLock for BatonLock {
    async fn acquire(&mut self, ttl: Duration) -> Result<bool> {
        let lock = self.client.lock_with(&self.name, LockOptions::new().ttl(ttl));
        self.guard = lock.try_acquire().await?;
        Ok(self.guard.is_some())
    }

    async fn release(&mut self) -> Result<bool> {
        // The guard is consumed by its release: a second release cannot even be sent.
        let Some(guard) = self.guard.take() else { return Ok(false) };
        match guard.release().await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::LockLost => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn token(&self) -> Option<FencingToken> {
        self.guard.as_ref().map(LockGuard::token)
    }

    fn crash(self: Box<Self>) {
        // Neither released (a guard's drop would release in the background) nor closed
        // (close releases too): the hold is left to its ttl, as a dead process leaves it.
        let me = *self;
        std::mem::forget(me.guard);
    }
}
