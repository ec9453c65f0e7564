//! `etcd://h1:2379,h2:2379` (gRPC) and `etcd+http://h1:2379` (the JSON gateway): one
//! store over either transport (docs/etcd-layout.md lists every key). This module only
//! routes each step to the layout of its kind and the URL's lock scheme.
//!
//! - `Lock` and `FairLock` are etcd's own `clientv3/concurrency.Mutex` queue (`lock`):
//!   `NAME/<lease hex>` keys, the lowest create revision holds, each waiter watches its
//!   predecessor, the token is the create revision, leases are etcd leases (the server's
//!   clock). `etcdctl lock NAME` and Go services contend on the same locks. `?scheme=txn`
//!   takes them as a bare-key try-lock instead (`txnlock`), `?scheme=v3lock` through etcd's
//!   lock service (`v3lock`).
//! - `RwLock` is the etcd recipes' read/write prefixes (`rwlock`): `NAME/read/<holder>` and
//!   `NAME/write/<holder>` keys; `Semaphore` and `PermitSemaphore` are leased permit keys
//!   `NAME/permits/<holder or permit id>` (`semaphore`); both over the per-holder keys of
//!   `keyed`, each hold under an etcd lease (the client's session lease for watchdog holds).
//! - `CountDownLatch` is a counter value `baton/latch/<name>` (`latch`).
//!
//! `config` parses the URL, `transport` reaches etcd, `session` keeps the client's session
//! lease, `watch` holds the waiters' subscriptions, `steps` serializes one process's steps,
//! `keys` holds the keys and values the lock layouts share, `local` what this process knows
//! of its own contenders.

mod config;
#[cfg(feature = "bench")]
mod diagnostics;
mod guarded;
mod inspect;
mod keyed;
mod keys;
mod latch;
mod local;
mod lock;
mod rwlock;
mod semaphore;
mod session;
mod steps;
mod transport;
mod txnlock;
mod v3lock;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use self::config::{EtcdConfig, LockScheme};
use self::keyed::WaitSub;
use self::keys::LockKeys;
use self::latch::Latches;
use self::rwlock::{RwBlocker, RwKeys};
use self::semaphore::{SemBlocker, SemKeys};
use self::steps::Steps;
use self::transport::Transport;
use self::txnlock::TxnKeys;
use self::watch::{KeySub, LockSub};
use super::stateful::StateStore;
use super::{Store, Subscription};
use crate::error::{Error, Result};
use crate::inspect::Inspection;
use crate::key::{Family, Key};
use crate::state::{Attempt, Released, Request};
use crate::url::StoreUrl;

/// The etcd store of one client.
pub(crate) struct Etcd {
    t: Arc<dyn Transport>,
    /// How locks are taken (`?scheme=`).
    scheme: LockScheme,
    /// `?scheme=v3lock`: the holds this process took through the lock service.
    v3: v3lock::Holds,
    local: Arc<local::Local>,
    latches: Latches,
    steps: Steps,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Etcd").field("transport", &self.t).finish_non_exhaustive()
    }
}

impl Etcd {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Etcd> {
        let cfg = EtcdConfig::from_url(url)?;
        let t = transport::connect(&cfg).await?;
        let steps = Steps::new(&cfg.endpoints);
        Ok(Etcd {
            local: Arc::new(local::Local::new(t.clone())),
            latches: Latches { t: t.clone(), steps: steps.clone() },
            t,
            scheme: cfg.scheme,
            v3: v3lock::Holds::default(),
            steps,
        })
    }

    /// A waiter's subscription on a RwLock or semaphore: one key watched at a time.
    fn wait_sub(&self, key: &Key, req: Option<Request>) -> Box<dyn Subscription> {
        let t = self.t.clone();
        match key.family {
            Family::Semaphore => Box::new(WaitSub::new(t, SemBlocker { keys: SemKeys::new(&key.name), req })),
            _ => Box::new(WaitSub::new(t, RwBlocker { keys: RwKeys::new(&key.name), req })),
        }
    }

    fn lock_sub(&self, key: &Key, holder: Option<String>) -> Box<dyn Subscription> {
        Box::new(LockSub::new(self.t.clone(), LockKeys::new(&key.name), holder, self.local.clone()))
    }
}

#[async_trait]
impl Store for Etcd {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        match key.family {
            Family::Lock if self.scheme == LockScheme::V3Lock => {
                v3lock::acquire(&*self.t, &self.v3, &key.name, req).await
            }
            _ if self.scheme == LockScheme::V3Lock => Err(v3lock_only(key)),
            Family::Lock if self.scheme == LockScheme::Txn => {
                let keys = TxnKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(&req.holder)).await;
                txnlock::acquire(&*self.t, &keys, req).await
            }
            Family::Lock => {
                let keys = LockKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(&req.holder)).await;
                lock::acquire(&*self.t, &self.local, &keys, req).await
            }
            Family::RwLock => rwlock::acquire(&*self.t, &self.local, &RwKeys::new(&key.name), req).await,
            Family::Semaphore => semaphore::acquire(&*self.t, &self.local, &SemKeys::new(&key.name), req).await,
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Store::acquire(&self.latches, key, req).await,
        }
    }

    /// A renewal may reuse a session keep-alive sent a little earlier (`session::freshness`).
    fn lease_margin(&self, lease: Duration) -> Duration {
        session::freshness(keys::secs(lease_ms(lease)))
    }

    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        match key.family {
            _ if self.scheme == LockScheme::V3Lock => {
                let ms = lease_ms(lease);
                v3lock::renew(&*self.t, &self.v3, &key.name, holder, ms).await
            }
            Family::Lock if self.scheme == LockScheme::Txn => {
                let ms = lease_ms(lease);
                let keys = TxnKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(holder)).await;
                txnlock::renew(&*self.t, &keys, holder, ms).await
            }
            Family::Lock => {
                let ms = lease_ms(lease);
                let keys = LockKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(holder)).await;
                lock::renew(&*self.t, &self.local, &keys, holder, ms).await
            }
            Family::RwLock | Family::Semaphore => {
                let ms = lease_ms(lease);
                for k in own_keys(key, holder) {
                    if keyed::renew(&*self.t, &self.local, &k, holder, ms).await? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Store::renew(&self.latches, key, holder, lease).await,
        }
    }

    /// Every renewal of the batch at once (keep-alives are independent calls), so a batch
    /// costs about one round trip, not one per lease.
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        let all = futures_util::future::join_all(items.iter().map(|(k, h)| self.renew(k, h, lease))).await;
        all.into_iter().collect()
    }

    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        match key.family {
            _ if self.scheme == LockScheme::V3Lock => {
                let fence = LockKeys::new(&key.name).fence;
                v3lock::release(&*self.t, &self.v3, &key.name, &fence, holder, count).await
            }
            Family::Lock if self.scheme == LockScheme::Txn => {
                txnlock::release(&*self.t, &TxnKeys::new(&key.name), holder, count).await
            }
            Family::Lock => {
                let keys = LockKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(holder)).await;
                lock::release(&*self.t, &self.local, &keys, holder, count).await
            }
            Family::RwLock | Family::Semaphore => {
                for k in own_keys(key, holder) {
                    match keyed::release(&*self.t, &self.local, &k, &fence_key(key), holder, count).await? {
                        Released::NotHeld => {}
                        done => return Ok(done),
                    }
                }
                Ok(Released::NotHeld)
            }
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Store::release(&self.latches, key, holder, count).await,
        }
    }

    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()> {
        match key.family {
            // No queue places in the txn and v3lock schemes.
            Family::Lock if self.scheme != LockScheme::Queue => Ok(()),
            // Not one step at a time: it only revokes the waiter's own leases.
            Family::Lock => {
                let keys = LockKeys::new(&key.name);
                lock::leave_queue(&*self.t, &self.local, &keys, holder).await
            }
            // Only writers wait with a key.
            Family::RwLock => keyed::leave_queue(&*self.t, &self.local, &RwKeys::new(&key.name).write, holder).await,
            Family::Semaphore => Ok(()),
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Store::leave_queue(&self.latches, key, holder).await,
        }
    }

    fn queues_locks(&self) -> bool {
        self.scheme == LockScheme::Queue
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        match key.family {
            _ if self.scheme == LockScheme::V3Lock && key.family != Family::Lock => Err(v3lock_only(key)),
            Family::Lock if self.scheme == LockScheme::Txn => {
                Ok(Box::new(KeySub::start(self.t.clone(), &TxnKeys::new(&key.name).key, true).await?))
            }
            Family::Lock => Ok(self.lock_sub(key, None)),
            Family::RwLock | Family::Semaphore => Ok(self.wait_sub(key, None)),
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => StateStore::subscribe(&self.latches, key).await,
        }
    }

    async fn subscribe_for(&self, key: &Key, req: &Request) -> Result<Box<dyn Subscription>> {
        match key.family {
            Family::Lock if self.scheme != LockScheme::Queue => Store::subscribe(self, key).await,
            Family::Lock => Ok(self.lock_sub(key, Some(req.holder.clone()))),
            Family::RwLock | Family::Semaphore => Ok(self.wait_sub(key, Some(req.clone()))),
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => StateStore::subscribe(&self.latches, key).await,
        }
    }

    async fn inspect(&self, key: &Key) -> Result<Inspection> {
        match key.family {
            _ if self.scheme == LockScheme::V3Lock && key.family != Family::Lock => Err(v3lock_only(key)),
            Family::Lock => inspect::lock(&*self.t, &self.v3, key).await,
            Family::RwLock => inspect::rwlock(&*self.t, key).await,
            Family::Semaphore => inspect::semaphore(&*self.t, key).await,
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Store::inspect(&self.latches, key).await,
        }
    }

    async fn latch_try_set(&self, key: &Key, count: u64) -> Result<bool> {
        if self.scheme == LockScheme::V3Lock {
            return Err(v3lock_only(key));
        }
        Store::latch_try_set(&self.latches, key, count).await
    }

    async fn latch_count_down(&self, key: &Key) -> Result<u64> {
        if self.scheme == LockScheme::V3Lock {
            return Err(v3lock_only(key));
        }
        Store::latch_count_down(&self.latches, key).await
    }

    async fn latch_count(&self, key: &Key) -> Result<u64> {
        if self.scheme == LockScheme::V3Lock {
            return Err(v3lock_only(key));
        }
        Store::latch_count(&self.latches, key).await
    }

    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn super::Diagnostics> {
        Some(self)
    }

    async fn close(&self) {
        self.local.sessions.close().await;
        self.t.close().await;
    }

    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        Some(self)
    }
}

fn v3lock_only(key: &Key) -> Error {
    Error::unsupported(format!(
        "{} `{}`: etcd's lock service (`?scheme=v3lock`) has locks only; use the default scheme for other kinds",
        key.family.as_str(),
        key.name
    ))
}

fn lease_ms(lease: Duration) -> u64 {
    u64::try_from(lease.as_millis()).unwrap_or(u64::MAX)
}

/// Where a RwLock or semaphore holder's key may be, likeliest first: a writer's id ends in
/// `:write` (as `crate::state::read_holder_of` pairs them), but an owner given by the caller
/// may too, so a RwLock holder not found there is looked for on the other side.
fn own_keys(key: &Key, holder: &str) -> Vec<Vec<u8>> {
    match key.family {
        Family::Semaphore => vec![SemKeys::new(&key.name).own(holder)],
        _ => {
            let (keys, write) = (RwKeys::new(&key.name), holder.ends_with(":write"));
            vec![keys.own(holder, write), keys.own(holder, !write)]
        }
    }
}

/// Where a RwLock or semaphore records the last token released.
fn fence_key(key: &Key) -> Vec<u8> {
    match key.family {
        Family::Semaphore => SemKeys::new(&key.name).fence,
        _ => RwKeys::new(&key.name).fence,
    }
}
