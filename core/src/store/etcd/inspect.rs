//! `inspect` of each layout, read from its keys.

use super::keys::{self, LockKeys};
use super::lock;
use super::rwlock::{self, RwKeys};
use super::semaphore::SemKeys;
use super::transport::Transport;
use super::txnlock;
use super::{keyed, v3lock};
use crate::error::Result;
use crate::inspect::{Holder, Inspection};
use crate::key::Key;
use crate::token::FencingToken;

/// A lock of any scheme: `?scheme=txn`'s bare key or the lock queue's head (also what
/// etcd's lock service writes) holds. Both are read, so that each scheme shows a holder
/// under the other (whose acquire it refuses).
pub(crate) async fn lock(t: &dyn Transport, v3: &v3lock::Holds, key: &Key) -> Result<Inspection> {
    let (es, bare, fence) = lock::read(t, &LockKeys::new(&key.name)).await?;
    // The lowest key holds, as for etcd's own clients: a waiter granted on the watch
    // event (the hand-off) is the holder while its key still says "waiting".
    let head = es.first().filter(|_| bare.is_none());
    // The lock service writes no holder: this process's own holds are known here.
    let own = |e: &keys::Entry| v3.describe(&e.kv.key);
    let holders: Vec<Holder> = bare
        .map(|kv| txnlock::holder(&kv))
        .or_else(|| {
            head.map(|e| {
                let (owner, count) = own(e).unwrap_or_else(|| (e.owner(), e.count().max(1)));
                (owner, count, u64::try_from(e.kv.create_revision).unwrap_or(0))
            })
        })
        .map(|(owner, count, token)| Holder {
            owner,
            mode: "exclusive",
            count,
            token: FencingToken::new(token),
            // etcd reports whole seconds: the engine's own deadline is more precise.
            lease_left: None,
            value: None,
        })
        .into_iter()
        .collect();
    let waiters = es.iter().skip(usize::from(head.is_some())).map(|e| e.owner()).collect();
    Ok(lock_inspection(key, holders, waiters, fence))
}

pub(crate) async fn rwlock(t: &dyn Transport, key: &Key) -> Result<Inspection> {
    let v = rwlock::view(t, &RwKeys::new(&key.name)).await?;
    let (holders, waiters) = rwlock::describe(t, &v).await?;
    Ok(lock_inspection(key, holders, waiters, v.fence))
}

pub(crate) async fn semaphore(t: &dyn Transport, key: &Key) -> Result<Inspection> {
    let keys = SemKeys::new(&key.name);
    let (mut all, fence, _) = keyed::read(t, &[&keys.permits], &keys.fence).await?;
    let hs = all.pop().unwrap_or_default();
    let holders = keyed::holders(t, hs.iter().map(|h| (h, "permits"))).await?;
    let mut info = lock_inspection(key, holders, Vec::new(), fence);
    info.permits = super::semaphore::recorded_size(&hs);
    Ok(info)
}

/// An inspection from keys: the last token is the largest of the holders' and the recorded one.
fn lock_inspection(key: &Key, holders: Vec<Holder>, waiters: Vec<String>, fence: u64) -> Inspection {
    let last = holders.iter().map(|h| h.token.get()).max().unwrap_or(0).max(fence);
    Inspection {
        name: key.name.clone(),
        kind: key.family.as_str(),
        holders,
        waiters,
        last_token: (last > 0).then_some(FencingToken::new(last)),
        count: 0,
        permits: None,
    }
}
