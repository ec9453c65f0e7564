//! The lock queue of etcd's `clientv3/concurrency.Mutex` (and `etcdctl lock`), written once
//! over [`Transport`]: every contender owns one key `NAME/<lease id in hex>` under a
//! lease, created by a txn guarded on `create_revision == 0`; the holder is the key with
//! the lowest create revision under `NAME/`; a waiter watches only the deletion of its
//! immediate predecessor; the fencing token is the holder key's create revision.
//!
//! baton adds, in the key's value (etcd's own clients write an empty value and ignore it):
//! the holder id and the hold count (`0` while waiting), so that re-entry, release and
//! renewal by holder id work from any process; and the TTL of the key's lease. A waiter's
//! key lives under a lease of the queue ttl (a vanished waiter is skipped when it ends);
//! on its grant the key moves to a lease of the hold's length (same key, same create
//! revision, so etcd's own waiters see nothing change). The last token is also recorded
//! in `baton/lock/NAME` on grant by promotion and on release, for `inspect`.

use crate::sync::LockExt;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::proto::{Compare, Kv, Range, RangeResp, Transport, Txn, TxnOp};
use super::session::{Session, Sessions};
use crate::error::{Error, Result};
use crate::state::{Attempt, Released, Request};

/// How many times one step re-reads after losing a race before giving up.
const RACES: usize = 64;

/// The keys of one lock name.
#[derive(Debug, Clone)]
pub(crate) struct LockKeys {
    /// `NAME/`: every contender's key is `NAME/<lease hex>`.
    pub(crate) prefix: Vec<u8>,
    /// `baton/lock/NAME`: the last token recorded.
    pub(crate) fence: Vec<u8>,
}

impl LockKeys {
    pub(crate) fn new(name: &str) -> LockKeys {
        LockKeys { prefix: format!("{name}/").into_bytes(), fence: format!("baton/lock/{name}").into_bytes() }
    }

    /// What identifies one holder's steps on this lock (only its own steps write its key).
    pub(crate) fn own(&self, holder: &str) -> Vec<u8> {
        let mut k = self.prefix.clone();
        k.push(0);
        k.extend_from_slice(holder.as_bytes());
        k
    }

    fn entry_key(&self, lease: i64) -> Vec<u8> {
        let mut k = self.prefix.clone();
        // clientv3: fmt.Sprintf("%s%x", pfx, leaseID): lowercase hex, no padding.
        k.extend_from_slice(format!("{lease:x}").as_bytes());
        k
    }
}

/// What baton keeps in its own queue keys.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Value {
    /// The holder id (`{client uuid}:{n}` or the caller's owner id).
    pub(crate) holder: String,
    /// Re-entry count; 0 while waiting.
    pub(crate) count: u32,
    /// The TTL (seconds) of the lease the key is attached to.
    pub(crate) ttl: i64,
    /// The hold's fencing token when it is not the key's own revision (the RwLock and
    /// semaphore layouts, `keyed`: written by a rewrite of a granted key); the lock queue
    /// never writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token: Option<i64>,
}

/// One contender under `NAME/`, oldest first.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) kv: Kv,
    /// `None` for a key baton did not write (`etcdctl lock`, a Go service).
    value: Option<Value>,
}

impl Entry {
    pub(crate) fn holder(&self) -> Option<&str> {
        self.value.as_ref().map(|v| v.holder.as_str())
    }

    /// The name other clients see for this contender.
    pub(crate) fn owner(&self) -> String {
        match &self.value {
            Some(v) => v.holder.clone(),
            None => format!("etcd:{}", String::from_utf8_lossy(&self.kv.key)),
        }
    }

    /// A baton waiter not granted yet (count 0).
    #[cfg(test)]
    fn waiting(&self) -> bool {
        self.value.as_ref().is_some_and(|v| v.count == 0)
    }

    pub(crate) fn count(&self) -> u32 {
        self.value.as_ref().map_or(1, |v| v.count)
    }

    fn is(&self, holder: &str) -> bool {
        self.holder() == Some(holder)
    }
}

/// The contenders of a range over `NAME/`: only keys directly under it (`NAME/x/…` is
/// another lock's), in create-revision order.
pub(crate) fn entries(keys: &LockKeys, r: &RangeResp) -> Vec<Entry> {
    let mut out: Vec<Entry> = r
        .kvs
        .iter()
        .filter(|kv| {
            kv.key.strip_prefix(keys.prefix.as_slice()).is_some_and(|rest| !rest.is_empty() && !rest.contains(&b'/'))
        })
        .map(|kv| Entry { value: serde_json::from_slice::<Value>(&kv.value).ok(), kv: kv.clone() })
        .collect();
    out.sort_by_key(|e| e.kv.create_revision);
    out
}

/// Lease seconds for a length in milliseconds (etcd leases count whole seconds).
pub(crate) fn secs(ms: u64) -> i64 {
    i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX).max(1)
}

pub(crate) fn encode(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

fn raced() -> Error {
    Error::backend("etcd: too many conflicting updates of one lock queue in a row")
}

/// One acquire attempt (see `Store::acquire`).
pub(crate) async fn acquire(t: &dyn Transport, local: &Local, keys: &LockKeys, req: &Request) -> Result<Attempt> {
    // A waiter whose predecessor was the holder and just went is most likely granted now:
    // its hold lease is granted alongside the read, not after it (one round trip less on
    // every hand-off).
    let mut spare = None;
    // A hand-off grant of this holder whose key is still moving: its outcome first.
    local.settle(&keys.prefix, &req.holder).await;
    if req.enqueue && local.settled_waiter(&keys.prefix, &req.holder) {
        // The attempt just before (the engine re-attempts right after subscribing) found
        // this waiter behind a predecessor, and the wait that follows watches that
        // predecessor from the revision of that read: nothing can be missed by not
        // reading again now.
        return Ok(Attempt::Busy { retry_ms: None });
    }
    if req.watchdog && req.enqueue {
        // Hand-off: this waiter's predecessor, the head, went; it is the head now.
        if let Some(kv) = local.hinted_own(&keys.prefix, &req.holder) {
            let e = Entry { value: serde_json::from_slice::<Value>(&kv.value).ok(), kv };
            if let Some(v) = e.value.clone().filter(|v| v.count == 0 && v.holder == req.holder) {
                if let Some(a) = handoff(local, keys, req, &e, v.clone()).await? {
                    return Ok(a);
                }
                if let Some(a) = promote(t, local, keys, req, &e, v, &mut spare).await? {
                    return Ok(a);
                }
            }
        }
    }
    if req.watchdog && !local.busy_lately(&keys.prefix) && !local.knows(&keys.prefix, &req.holder) {
        // Most likely uncontended: one txn under the session lease.
        if let Some(a) = session_create(t, local, keys, req).await? {
            return Ok(a);
        }
    }
    if req.enqueue && local.busy_lately(&keys.prefix) && !local.knows(&keys.prefix, &req.holder) {
        // Another contender of this process read the queue busy a moment ago: queue up
        // at once (the txn's own read of the queue says where this waiter stands).
        if let Some(a) = create(t, local, keys, req, false, &mut spare).await? {
            return Ok(a);
        }
    }
    for _ in 0..RACES {
        // Likewise when the queue has not been seen busy lately and this holder has no key:
        // most likely an uncontended grant, whose key goes under a hold lease.
        let likely_free = !local.busy_lately(&keys.prefix) && !local.knows(&keys.prefix, &req.holder);
        let r = if spare.is_none() && (local.take_hint(&keys.prefix, &req.holder) || likely_free) {
            let (r, l) = tokio::join!(t.range(Range::prefix(&keys.prefix)), t.lease_grant(secs(req.lease_ms)));
            spare = Some(l?);
            r?
        } else {
            t.range(Range::prefix(&keys.prefix)).await?
        };
        let out = step(t, local, keys, req, &r, &mut spare).await;
        if let Some(l) = spare.take() {
            // Not used: the lease has no key; ending it is bookkeeping only.
            t.lease_revoke(l).await?;
        }
        if let Some(a) = out? {
            return Ok(a);
        }
    }
    Err(raced())
}

/// One try of [`acquire`] on the queue `r`; `None`: raced, read again.
async fn step(
    t: &dyn Transport,
    local: &Local,
    keys: &LockKeys,
    req: &Request,
    r: &RangeResp,
    spare: &mut Option<i64>,
) -> Result<Option<Attempt>> {
    {
        let es = entries(keys, r);
        local.saw(keys, &req.holder, &es, r.revision);
        local.busy(&keys.prefix, !es.is_empty());
        if let Some(i) = es.iter().position(|e| e.is(&req.holder)) {
            return own_entry(t, local, keys, req, &es[i], i == 0, spare).await;
        }
        if !es.is_empty() && !req.enqueue {
            return Ok(Some(Attempt::Busy { retry_ms: None }));
        }
        create(t, local, keys, req, es.is_empty(), spare).await
    }
}

/// Creates the holder's key as `NAME/<session lease hex>` under the session lease, in
/// one txn guarded on `NAME/` being empty: granted. `None` when it was not empty (someone
/// holds or waits, or another holder of this client has the session key): the caller
/// reads and queues up the usual way, under a queue lease.
async fn session_create(t: &dyn Transport, local: &Local, keys: &LockKeys, req: &Request) -> Result<Option<Attempt>> {
    let ttl = secs(req.lease_ms);
    let s = local.sessions.get(ttl).await?;
    let key = keys.entry_key(s.lease);
    let value = Value { holder: req.holder.clone(), count: 1, ttl, token: None };
    let txn = Txn {
        compare: vec![Compare::none_under(&keys.prefix)],
        success: vec![TxnOp::Put { key: key.clone(), value: encode(&value), lease: Some(s.lease) }],
        failure: vec![],
    };
    let resp = match t.txn(txn).await {
        Ok(r) => r,
        Err(e) => return lease_gone(&s, e),
    };
    local.busy(&keys.prefix, !resp.succeeded);
    if !resp.succeeded {
        return Ok(None);
    }
    let mine = resp.revision;
    let kv = Kv { key, value: encode(&value), create_revision: mine, mod_revision: mine, lease: s.lease };
    local.hold(&keys.prefix, &req.holder, kv);
    Ok(Some(Attempt::Granted { token: u64::try_from(mine).unwrap_or(0), count: 1, fresh: true }))
}

/// A txn under a session lease failed: when etcd no longer knows the lease (the process
/// was paused past it), the session is given up and the caller tries again without it.
fn lease_gone<T>(s: &Session, e: Error) -> Result<Option<T>> {
    if e.message().contains("lease not found") {
        s.give_up();
        return Ok(None);
    }
    Err(e)
}

/// An attempt by a holder that already has a key; `None`: raced, read again.
async fn own_entry(
    t: &dyn Transport,
    local: &Local,
    keys: &LockKeys,
    req: &Request,
    e: &Entry,
    first: bool,
    spare: &mut Option<i64>,
) -> Result<Option<Attempt>> {
    let Some(v) = e.value.clone() else { return Ok(None) };
    let token = u64::try_from(e.kv.create_revision).unwrap_or(0);
    if first && v.count > 0 {
        // Re-entry: same key, same token.
        let count = v.count.checked_add(1).ok_or_else(|| Error::invalid_argument("hold count overflow"))?;
        let value = Value { count, ..v };
        let Some(rev) = put_if_unchanged_rev(t, &e.kv, &value).await? else { return Ok(None) };
        local.hold(&keys.prefix, &req.holder, Kv { value: encode(&value), mod_revision: rev, ..e.kv.clone() });
        return Ok(Some(Attempt::Granted { token, count, fresh: false }));
    }
    if first {
        return promote(t, local, keys, req, e, v, spare).await;
    }
    if v.count > 0 {
        // Written as a grant by an attempt that then found an older key: a waiter.
        if !put_if_unchanged(t, &e.kv, Value { count: 0, ..v }).await? {
            return Ok(None);
        }
    }
    // Waiting: this attempt refreshes the queue place (unless refreshed lately: a third
    // of its ttl).
    if req.enqueue && local.due(&keys.prefix, &req.holder, e.kv.lease, v.ttl) {
        let sent = Instant::now();
        if t.lease_keepalive(e.kv.lease).await? > 0 {
            local.alive(e.kv.lease, sent, v.ttl);
        }
    }
    Ok(Some(Attempt::Busy { retry_ms: None }))
}

/// `kv` rewritten with `value` if nobody changed it since it was read.
async fn put_if_unchanged(t: &dyn Transport, kv: &Kv, value: Value) -> Result<bool> {
    Ok(put_if_unchanged_rev(t, kv, &value).await?.is_some())
}

/// [`put_if_unchanged`], returning the key's new mod revision when it wrote.
async fn put_if_unchanged_rev(t: &dyn Transport, kv: &Kv, value: &Value) -> Result<Option<i64>> {
    let txn = Txn {
        compare: vec![Compare::modified(&kv.key, kv.mod_revision)],
        success: vec![TxnOp::Put { key: kv.key.clone(), value: encode(value), lease: None }],
        failure: vec![],
    };
    let resp = t.txn(txn).await?;
    Ok(resp.succeeded.then_some(resp.revision))
}

/// Grants the oldest key, a waiter until now: its key moves to a lease of the hold's
/// length, keeping its create revision (the token).
async fn promote(
    t: &dyn Transport,
    local: &Local,
    keys: &LockKeys,
    req: &Request,
    e: &Entry,
    v: Value,
    spare: &mut Option<i64>,
) -> Result<Option<Attempt>> {
    let ttl = secs(req.lease_ms);
    let token = e.kv.create_revision;
    // A watchdog hold moves to the session lease (no grant on the hand-off).
    let session = if req.watchdog { Some(local.sessions.get(ttl).await?) } else { None };
    let lease = match (&session, v.ttl == ttl, spare.take()) {
        (Some(s), _, l) => {
            *spare = l;
            (e.kv.lease != s.lease).then_some(s.lease)
        }
        (None, true, l) => {
            *spare = l;
            None
        }
        (None, false, Some(l)) => Some(l),
        (None, false, None) => Some(t.lease_grant(ttl).await?),
    };
    let value = Value { count: 1, ttl, ..v };
    let resp = match (t.txn(grant_txn(keys, &e.kv, &value, lease)).await, &session) {
        (Ok(r), _) => r,
        (Err(e), Some(s)) => return lease_gone(s, e),
        (Err(e), None) => return Err(e),
    };
    if !resp.succeeded {
        // The waiter's lease ended meanwhile: read again (a new key follows).
        if session.is_none() {
            *spare = lease;
        }
        return Ok(None);
    }
    // The queue lease has no key left and runs out on its own (≤ the queue ttl): not
    // revoking it keeps the hand-off at one write.
    local.forget(&keys.prefix, &req.holder, e.kv.lease);
    // A grant that came through the queue: this name is contended, so this holder's next
    // acquire reads first instead of trying the uncontended txn (a write that would fail).
    local.busy(&keys.prefix, true);
    let kv =
        Kv { value: encode(&value), mod_revision: resp.revision, lease: lease.unwrap_or(e.kv.lease), ..e.kv.clone() };
    local.hold(&keys.prefix, &req.holder, kv);
    Ok(Some(Attempt::Granted { token: u64::try_from(token).unwrap_or(0), count: 1, fresh: true }))
}

/// The grant of the waiter key `kv`: rewritten as held (under `lease`; `None` keeps its
/// lease), same create revision, and its token recorded; only while it is still there.
fn grant_txn(keys: &LockKeys, kv: &Kv, value: &Value, lease: Option<i64>) -> Txn {
    Txn {
        compare: vec![Compare::create(&kv.key, kv.create_revision)],
        success: vec![
            TxnOp::Put { key: kv.key.clone(), value: encode(value), lease },
            TxnOp::Put { key: keys.fence.clone(), value: kv.create_revision.to_string().into_bytes(), lease: Some(0) },
        ],
        failure: vec![],
    }
}

/// The hand-off grant of a watchdog waiter whose predecessor was the head and went: it is
/// the head now (keys only join at the back), and its key lives on its queue lease at
/// least until that lease's last keep-alive (or grant) was sent plus its ttl. With room
/// left on that, it is granted at once, with no round trip; its key moves to the session
/// lease right after, in the background (same txn as [`promote`]), which must land before
/// that time: else, or when it finds the key gone, the hold is lost and its next renewal
/// says so. `None`: no such room known; the caller grants by writing first.
async fn handoff(local: &Local, keys: &LockKeys, req: &Request, e: &Entry, v: Value) -> Result<Option<Attempt>> {
    // Room for the move (one txn, retried on another endpoint when one fails).
    const ROOM: Duration = Duration::from_secs(1);
    let Some(safe_until) = local.alive_until(e.kv.lease) else { return Ok(None) };
    let ttl = secs(req.lease_ms);
    let s = local.sessions.get(ttl).await?;
    if e.kv.lease == s.lease || safe_until.saturating_duration_since(Instant::now()) < ROOM {
        return Ok(None);
    }
    let value = Value { count: 1, ttl, ..v };
    let txn = grant_txn(keys, &e.kv, &value, Some(s.lease));
    let (tx, rx) = tokio::sync::watch::channel(Moved::Pending);
    let kv = Kv { value: encode(&value), lease: s.lease, ..e.kv.clone() };
    local.moving(&keys.prefix, &req.holder, Moving { rx, safe_until, kv });
    tokio::spawn(move_key(local.sessions.transport(), s, txn, safe_until, tx));
    // The queue lease is no longer this waiter's to give back: revoking it now would
    // delete the key before it moved.
    local.forget(&keys.prefix, &req.holder, e.kv.lease);
    local.busy(&keys.prefix, true);
    Ok(Some(Attempt::Granted { token: u64::try_from(e.kv.create_revision).unwrap_or(0), count: 1, fresh: true }))
}

/// Moves a hand-off grant's key to the session lease (`txn`, from [`grant_txn`]); retried
/// on connection failures until `until`, when the key could end with its queue lease.
async fn move_key(t: Arc<dyn Transport>, s: Arc<Session>, txn: Txn, until: Instant, tx: watch::Sender<Moved>) {
    let deadline = tokio::time::Instant::from_std(until);
    // Bounded by `until`: every turn waits at most until then.
    let out = loop {
        match tokio::time::timeout_at(deadline, t.txn(txn.clone())).await {
            Ok(Ok(r)) if r.succeeded => break Moved::Done(r.revision),
            // The key is gone (its lease ended, or it was deleted by hand).
            Ok(Ok(_)) => break Moved::Failed,
            Ok(Err(e)) if e.kind() == crate::ErrorKind::Connection => {
                tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + Duration::from_millis(50))).await;
            }
            Ok(Err(e)) => {
                if e.message().contains("lease not found") {
                    s.give_up();
                }
                break Moved::Failed;
            }
            Err(_) => break Moved::Failed,
        }
    };
    tx.send_replace(out);
}

/// What became of the move of a hand-off grant's key (see [`handoff`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moved {
    Pending,
    /// Under the session lease; the key's new mod revision.
    Done(i64),
    /// Not moved in time, or the key was gone: the hold is lost.
    Failed,
}

/// A hand-off grant whose key is moving.
#[derive(Debug)]
struct Moving {
    rx: watch::Receiver<Moved>,
    /// Until when the key surely lives on its queue lease.
    safe_until: Instant,
    /// The key as the move writes it (its mod revision comes with `Done`).
    kv: Kv,
}

/// Creates the holder's key: under a hold lease when the queue looked empty, else under a
/// queue lease. `None`: raced, read again.
async fn create(
    t: &dyn Transport,
    local: &Local,
    keys: &LockKeys,
    req: &Request,
    expect_first: bool,
    spare: &mut Option<i64>,
) -> Result<Option<Attempt>> {
    let ttl = secs(if expect_first { req.lease_ms } else { req.queue_ttl_ms });
    let sent = Instant::now();
    let lease = match spare.take() {
        Some(l) if expect_first => l,
        other => {
            *spare = other;
            t.lease_grant(ttl).await?
        }
    };
    if !expect_first {
        // Known before the key exists, so that a `leave_queue` racing this attempt can end it.
        local.remember(&keys.prefix, &req.holder, lease);
        local.alive(lease, sent, ttl);
    }
    let key = keys.entry_key(lease);
    let value = Value { holder: req.holder.clone(), count: u32::from(expect_first), ttl, token: None };
    let txn = Txn {
        compare: vec![Compare::create(&key, 0)],
        success: vec![
            TxnOp::Put { key: key.clone(), value: encode(&value), lease: Some(lease) },
            TxnOp::Range(Range::prefix(&keys.prefix)),
        ],
        failure: vec![],
    };
    let resp = t.txn(txn).await?;
    if !resp.succeeded {
        local.forget(&keys.prefix, &req.holder, lease);
        t.lease_revoke(lease).await?;
        return Ok(None);
    }
    let mine = resp.revision;
    let es = resp.range(1).map(|r| entries(keys, r)).unwrap_or_default();
    if es.iter().any(|e| e.is(&req.holder) && e.kv.create_revision < mine) {
        // This holder already had a key (made elsewhere): keep that one.
        local.forget(&keys.prefix, &req.holder, lease);
        t.lease_revoke(lease).await?;
        return Ok(None);
    }
    local.saw(keys, &req.holder, &es, mine);
    local.busy(&keys.prefix, es.len() > 1);
    let first = es.first().is_some_and(|e| e.kv.create_revision == mine);
    match (first, expect_first) {
        (true, true) => {
            let kv = Kv { key, value: encode(&value), create_revision: mine, mod_revision: mine, lease };
            local.hold(&keys.prefix, &req.holder, kv);
            Ok(Some(Attempt::Granted { token: u64::try_from(mine).unwrap_or(0), count: 1, fresh: true }))
        }
        (true, false) => {
            // The queue emptied between the read and the txn.
            match es.first() {
                Some(e) => promote(t, local, keys, req, e, value, spare).await,
                None => Ok(None),
            }
        }
        (false, true) => {
            // Someone got in between the read and the txn.
            let kv = es.iter().find(|e| e.kv.create_revision == mine).map(|e| e.kv.clone());
            if !req.enqueue {
                delete_entry(t, &key, mine, lease).await?;
            } else if let Some(kv) = kv {
                // Stays as a waiter (under the hold lease until its grant moves it).
                local.remember(&keys.prefix, &req.holder, lease);
                put_if_unchanged(t, &kv, Value { count: 0, ..value }).await?;
            }
            Ok(Some(Attempt::Busy { retry_ms: None }))
        }
        (false, false) => Ok(Some(Attempt::Busy { retry_ms: None })),
    }
}

async fn delete_entry(t: &dyn Transport, key: &[u8], create_rev: i64, lease: i64) -> Result<bool> {
    let txn = Txn {
        compare: vec![Compare::create(key, create_rev)],
        success: vec![TxnOp::Delete { key: key.to_vec() }],
        failure: vec![],
    };
    let ok = t.txn(txn).await?.succeeded;
    if lease != 0 {
        t.lease_revoke(lease).await?;
    }
    Ok(ok)
}

/// The holder's granted key, if it holds the lock.
async fn held(t: &dyn Transport, keys: &LockKeys, holder: &str) -> Result<Option<Entry>> {
    let r = t.range(Range::prefix(&keys.prefix)).await?;
    let es = entries(keys, &r);
    Ok(es.into_iter().enumerate().find(|(i, e)| *i == 0 && e.is(holder) && e.count() > 0).map(|(_, e)| e))
}

/// Keeps the holder's lease alive for `lease_ms` more (a different length moves the key
/// to a new lease); false when it holds nothing.
pub(crate) async fn renew(
    t: &dyn Transport,
    local: &Local,
    keys: &LockKeys,
    holder: &str,
    lease_ms: u64,
) -> Result<bool> {
    let ttl = secs(lease_ms);
    if local.settle(&keys.prefix, holder).await == Some(Moved::Failed) {
        return Ok(false);
    }
    if let Some(kv) = local.known_hold(&keys.prefix, holder)
        && let Some(s) = local.sessions.find(kv.lease)
    {
        // Under the session lease: alive while the session is (one keep-alive for all).
        return s.refresh(t).await;
    }
    if let Some(kv) = local.known_hold(&keys.prefix, holder)
        && serde_json::from_slice::<Value>(&kv.value).is_ok_and(|v| v.ttl == ttl)
    {
        // The grant this process made: its lease is the hold.
        return Ok(t.lease_keepalive(kv.lease).await? > 0);
    }
    let Some(e) = held(t, keys, holder).await? else { return Ok(false) };
    let Some(v) = e.value.clone() else { return Ok(false) };
    if v.ttl == ttl {
        return Ok(t.lease_keepalive(e.kv.lease).await? > 0);
    }
    let lease = t.lease_grant(ttl).await?;
    let txn = Txn {
        compare: vec![
            Compare::create(&e.kv.key, e.kv.create_revision),
            Compare::modified(&e.kv.key, e.kv.mod_revision),
        ],
        success: vec![TxnOp::Put {
            key: e.kv.key.clone(),
            value: encode(&Value { ttl, ..v.clone() }),
            lease: Some(lease),
        }],
        failure: vec![],
    };
    let resp = t.txn(txn).await?;
    if resp.succeeded {
        let kv = Kv { value: encode(&Value { ttl, ..v }), mod_revision: resp.revision, lease, ..e.kv.clone() };
        local.hold(&keys.prefix, holder, kv);
    }
    let old = if resp.succeeded { e.kv.lease } else { lease };
    if !local.sessions.owns(old) {
        t.lease_revoke(old).await?;
    }
    Ok(resp.succeeded)
}

/// Gives back `count` holds (`u32::MAX`: all).
pub(crate) async fn release(
    t: &dyn Transport,
    local: &Local,
    keys: &LockKeys,
    holder: &str,
    count: u32,
) -> Result<Released> {
    if let Some(kv) = local.take_moving(&keys.prefix, holder) {
        // A hand-off grant whose key may still be moving (or failed to): deleted by its
        // create revision, wherever the move got to; a move after this finds it gone.
        let txn = release_txn(keys, &kv, Compare::create(&kv.key, kv.create_revision));
        let freed = t.txn(txn).await?.succeeded;
        return Ok(if freed { Released::Freed } else { Released::NotHeld });
    }
    // First from what this process knows of its grant (no read); then from a read.
    let mut known = local.take_hold(&keys.prefix, holder);
    for _ in 0..RACES {
        let e = match known.take() {
            Some(kv) => Entry { value: serde_json::from_slice::<Value>(&kv.value).ok(), kv },
            None => match held(t, keys, holder).await? {
                Some(e) => e,
                None => return Ok(Released::NotHeld),
            },
        };
        let Some(v) = e.value.clone() else { return Ok(Released::NotHeld) };
        if count != u32::MAX && count < v.count {
            let left = v.count - count;
            let value = Value { count: left, ..v };
            if let Some(rev) = put_if_unchanged_rev(t, &e.kv, &value).await? {
                local.hold(&keys.prefix, holder, Kv { value: encode(&value), mod_revision: rev, ..e.kv });
                return Ok(Released::StillHeld(left));
            }
            continue;
        }
        let txn = release_txn(keys, &e.kv, Compare::modified(&e.kv.key, e.kv.mod_revision));
        if t.txn(txn).await?.succeeded {
            // The hold's lease has no key left and simply runs out: not revoking it keeps
            // a release at one round trip.
            return Ok(Released::Freed);
        }
    }
    Err(raced())
}

/// Deletes the held key `kv` if `guard` holds, recording its token.
fn release_txn(keys: &LockKeys, kv: &Kv, guard: Compare) -> Txn {
    Txn {
        compare: vec![guard],
        success: vec![
            TxnOp::Delete { key: kv.key.clone() },
            TxnOp::Put { key: keys.fence.clone(), value: kv.create_revision.to_string().into_bytes(), lease: Some(0) },
        ],
        failure: vec![],
    }
}

/// Removes the holder's waiting keys: each is alone on the lease it was created with,
/// which this process remembers, so revoking that lease deletes it (one call, no read).
pub(crate) async fn leave_queue(t: &dyn Transport, local: &Local, keys: &LockKeys, holder: &str) -> Result<()> {
    local.last_seen(&keys.prefix, holder);
    for lease in local.take(&keys.prefix, holder) {
        t.lease_revoke(lease).await?;
    }
    Ok(())
}

/// What this client knows of its own keys: the queue leases it created, by lock and
/// holder, with when each was last refreshed; its grants; its session leases.
#[derive(Debug)]
#[allow(clippy::type_complexity)]
pub(crate) struct Local {
    pub(crate) sessions: Sessions,
    waiting: Mutex<HashMap<(Vec<u8>, String), Vec<(i64, Instant)>>>,
    /// The keys of the grants this process made, as last written.
    held: Mutex<HashMap<(Vec<u8>, String), Kv>>,
    /// Waiters whose predecessor, the holder, just went.
    hints: Mutex<std::collections::HashSet<(Vec<u8>, String)>>,
    /// Each waiter's predecessor as its last attempt read it.
    seen: Mutex<HashMap<(Vec<u8>, String), (Vec<u8>, i64, bool)>>,
    /// Each waiter's own key as its last attempt read it.
    mine: Mutex<HashMap<(Vec<u8>, String), Kv>>,
    /// When a read last found each queue busy.
    busy: Mutex<HashMap<Vec<u8>, Instant>>,
    /// Until when each of this process's queue leases surely lives (its last keep-alive's,
    /// or its grant's, send time plus its ttl).
    alive: Mutex<HashMap<i64, Instant>>,
    /// Hand-off grants whose keys are moving to the session lease.
    moving: Mutex<HashMap<(Vec<u8>, String), Moving>>,
    /// Waits ended by their predecessor's deletion, and how many of those by a watch
    /// event (the rest found it gone on their first read): tests count them.
    pub(crate) wakes: AtomicU64,
    pub(crate) wake_events: AtomicU64,
}

impl Local {
    pub(crate) fn new(t: Arc<dyn Transport>) -> Local {
        Local {
            sessions: Sessions::new(t),
            waiting: Mutex::default(),
            held: Mutex::default(),
            hints: Mutex::default(),
            seen: Mutex::default(),
            mine: Mutex::default(),
            busy: Mutex::default(),
            alive: Mutex::default(),
            moving: Mutex::default(),
            wakes: AtomicU64::new(0),
            wake_events: AtomicU64::new(0),
        }
    }

    fn hold(&self, prefix: &[u8], holder: &str, kv: Kv) {
        self.held.locked().insert((prefix.to_vec(), holder.to_owned()), kv);
    }

    fn take_hold(&self, prefix: &[u8], holder: &str) -> Option<Kv> {
        self.held.locked().remove(&(prefix.to_vec(), holder.to_owned()))
    }

    fn alive(&self, lease: i64, sent: Instant, ttl_s: i64) {
        let until = sent + Duration::from_secs(u64::try_from(ttl_s).unwrap_or(0));
        self.alive.locked().insert(lease, until);
    }

    fn alive_until(&self, lease: i64) -> Option<Instant> {
        self.alive.locked().get(&lease).copied()
    }

    fn moving(&self, prefix: &[u8], holder: &str, m: Moving) {
        self.moving.locked().insert((prefix.to_vec(), holder.to_owned()), m);
    }

    /// The key of `holder`'s hand-off grant that may still be moving, taken; one that
    /// moved already becomes a known grant instead (`None`).
    fn take_moving(&self, prefix: &[u8], holder: &str) -> Option<Kv> {
        let k = (prefix.to_vec(), holder.to_owned());
        let m = self.moving.locked().remove(&k)?;
        let moved = *m.rx.borrow();
        match moved {
            Moved::Done(rev) => {
                self.hold(prefix, holder, Kv { mod_revision: rev, ..m.kv });
                None
            }
            Moved::Pending | Moved::Failed => Some(m.kv),
        }
    }

    /// What became of `holder`'s hand-off grant whose key was moving, once it is known (at
    /// the latest when the key could have ended); `None`: there is none. A moved key
    /// becomes a known grant.
    async fn settle(&self, prefix: &[u8], holder: &str) -> Option<Moved> {
        let k = (prefix.to_vec(), holder.to_owned());
        let (mut rx, until) = {
            let m = self.moving.locked();
            let e = m.get(&k)?;
            (e.rx.clone(), e.safe_until)
        };
        let until = tokio::time::Instant::from_std(until);
        let _ = tokio::time::timeout_at(until, rx.wait_for(|m| *m != Moved::Pending)).await;
        let m = self.moving.locked().remove(&k)?;
        let moved = *m.rx.borrow();
        match moved {
            Moved::Done(rev) => {
                self.hold(prefix, holder, Kv { mod_revision: rev, ..m.kv });
                Some(moved)
            }
            // Still pending when the key could have ended: as good as lost.
            Moved::Pending | Moved::Failed => Some(Moved::Failed),
        }
    }

    fn known_hold(&self, prefix: &[u8], holder: &str) -> Option<Kv> {
        self.held.locked().get(&(prefix.to_vec(), holder.to_owned())).cloned()
    }

    /// Notes where `holder` stood in the queue `es` read at `revision`, for its next wait.
    fn saw(&self, keys: &LockKeys, holder: &str, es: &[Entry], revision: i64) {
        let at = es.iter().position(|e| e.is(holder)).filter(|i| *i > 0);
        let pred = at.map(|i| (es[i - 1].kv.key.clone(), revision, i == 1));
        let k = (keys.prefix.clone(), holder.to_owned());
        {
            let mut mine = self.mine.locked();
            match at {
                Some(i) => mine.insert(k.clone(), es[i].kv.clone()),
                None => mine.remove(&k),
            };
        }
        let mut seen = self.seen.locked();
        match pred {
            Some(p) => seen.insert(k, p),
            None => seen.remove(&k),
        };
    }

    /// Where the last attempt of `holder` saw it stand (its predecessor, the revision of
    /// that read, whether the predecessor is the head); taken once.
    pub(crate) fn last_seen(&self, prefix: &[u8], holder: &str) -> Option<(Vec<u8>, i64, bool)> {
        self.seen.locked().remove(&(prefix.to_vec(), holder.to_owned()))
    }

    fn busy(&self, prefix: &[u8], busy: bool) {
        let mut m = self.busy.locked();
        if busy {
            m.insert(prefix.to_vec(), Instant::now());
        } else {
            m.remove(prefix);
        }
    }

    /// Whether a read found the queue busy within the last 100 ms.
    fn busy_lately(&self, prefix: &[u8]) -> bool {
        let m = self.busy.locked();
        m.get(prefix).is_some_and(|at| at.elapsed() < Duration::from_millis(100))
    }

    /// Whether this process knows of a key of `holder` (waiting or granted).
    fn knows(&self, prefix: &[u8], holder: &str) -> bool {
        let k = (prefix.to_vec(), holder.to_owned());
        self.with(|m| m.contains_key(&k)) || self.held.locked().contains_key(&k)
    }

    /// A waiter whose last attempt found it behind a predecessor, not yet waited on, with
    /// a queue place that needs no refresh yet.
    fn settled_waiter(&self, prefix: &[u8], holder: &str) -> bool {
        let k = (prefix.to_vec(), holder.to_owned());
        if !self.seen.locked().contains_key(&k) {
            return false;
        }
        self.with(|m| m.get(&k).and_then(|v| v.last()).is_some_and(|(_, at)| at.elapsed() < Duration::from_millis(500)))
    }

    /// Notes that `holder`'s predecessor was the holder and went.
    pub(crate) fn hint(&self, prefix: &[u8], holder: &str) {
        self.hints.locked().insert((prefix.to_vec(), holder.to_owned()));
    }

    /// The waiter's own key, when its predecessor was the head and went: it is the head
    /// now (keys only ever join at the back), so no read is needed to grant it. Takes
    /// the hint only then.
    fn hinted_own(&self, prefix: &[u8], holder: &str) -> Option<Kv> {
        let k = (prefix.to_vec(), holder.to_owned());
        let mut hints = self.hints.locked();
        if !hints.contains(&k) {
            return None;
        }
        let kv = self.mine.locked().remove(&k)?;
        hints.remove(&k);
        Some(kv)
    }

    fn take_hint(&self, prefix: &[u8], holder: &str) -> bool {
        self.hints.locked().remove(&(prefix.to_vec(), holder.to_owned()))
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<(Vec<u8>, String), Vec<(i64, Instant)>>) -> R) -> R {
        f(&mut self.waiting.locked())
    }

    pub(crate) fn remember(&self, prefix: &[u8], holder: &str, lease: i64) {
        self.with(|m| m.entry((prefix.to_vec(), holder.to_owned())).or_default().push((lease, Instant::now())));
    }

    pub(crate) fn forget(&self, prefix: &[u8], holder: &str, lease: i64) {
        self.alive.locked().remove(&lease);
        self.with(|m| {
            let k = (prefix.to_vec(), holder.to_owned());
            if let Some(v) = m.get_mut(&k) {
                v.retain(|(l, _)| *l != lease);
                if v.is_empty() {
                    m.remove(&k);
                }
            }
        });
    }

    pub(crate) fn take(&self, prefix: &[u8], holder: &str) -> Vec<i64> {
        let leases: Vec<i64> = self
            .with(|m| m.remove(&(prefix.to_vec(), holder.to_owned())))
            .unwrap_or_default()
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        let mut alive = self.alive.locked();
        for l in &leases {
            alive.remove(l);
        }
        leases
    }

    /// Whether `lease` (of `ttl_s` seconds) is due for a keep-alive; marks it refreshed.
    fn due(&self, prefix: &[u8], holder: &str, lease: i64, ttl_s: i64) -> bool {
        let third = Duration::from_millis(u64::try_from(ttl_s).unwrap_or(1).saturating_mul(1000) / 3);
        self.with(|m| {
            let Some(v) = m.get_mut(&(prefix.to_vec(), holder.to_owned())) else { return true };
            match v.iter_mut().find(|(l, _)| *l == lease) {
                Some((_, at)) if at.elapsed() < third => false,
                Some((_, at)) => {
                    *at = Instant::now();
                    true
                }
                None => true,
            }
        })
    }
}

/// The contenders and the recorded last token, in one read.
pub(crate) async fn read(t: &dyn Transport, keys: &LockKeys) -> Result<(Vec<Entry>, u64)> {
    let txn = Txn {
        compare: vec![],
        success: vec![TxnOp::Range(Range::prefix(&keys.prefix)), TxnOp::Range(Range::key(&keys.fence))],
        failure: vec![],
    };
    let resp = t.txn(txn).await?;
    let es = resp.range(0).map(|r| entries(keys, r)).unwrap_or_default();
    let fence = resp
        .range(1)
        .and_then(|r| r.kvs.first())
        .and_then(|kv| std::str::from_utf8(&kv.value).ok()?.parse::<u64>().ok())
        .unwrap_or(0);
    Ok((es, fence))
}

/// Where a waiter stands: `None` when it is at the head (or has no key), else the key of
/// its immediate predecessor, the revision the read saw, and whether that predecessor is
/// the head.
pub(crate) async fn predecessor(
    t: &dyn Transport,
    keys: &LockKeys,
    holder: &str,
) -> Result<Option<(Vec<u8>, i64, bool)>> {
    let r = t.range(Range::prefix(&keys.prefix)).await?;
    let es = entries(keys, &r);
    let pred = match es.iter().position(|e| e.is(holder)) {
        Some(0) => None,
        Some(i) => Some((es[i - 1].kv.key.clone(), i == 1)),
        // No key of its own (a `try` attempt): the newest contender.
        None => es.last().map(|e| (e.kv.key.clone(), es.len() == 1)),
    };
    Ok(pred.map(|(k, head)| (k, r.revision, head)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, rev: i64, value: &str) -> Kv {
        Kv { key: key.into(), value: value.into(), create_revision: rev, mod_revision: rev, lease: 1 }
    }

    #[test]
    fn entries_are_direct_children_in_revision_order() {
        let keys = LockKeys::new("a");
        let r = RangeResp {
            revision: 9,
            kvs: vec![
                kv("a/2", 5, ""),
                kv("a/b/3", 2, ""),
                kv("a/1", 3, r#"{"holder":"h","count":0,"ttl":5}"#),
                kv("a/", 1, ""),
            ],
        };
        let es = entries(&keys, &r);
        assert_eq!(es.iter().map(|e| e.kv.create_revision).collect::<Vec<_>>(), vec![3, 5]);
        assert!(es[0].waiting() && es[0].is("h"));
        assert_eq!(es[1].owner(), "etcd:a/2");
        assert!(!es[1].waiting());
    }

    #[test]
    fn lease_seconds_round_up() {
        assert_eq!(secs(0), 1);
        assert_eq!(secs(1), 1);
        assert_eq!(secs(1000), 1);
        assert_eq!(secs(1001), 2);
        assert_eq!(secs(u64::MAX), i64::try_from(u64::MAX.div_ceil(1000)).unwrap());
        assert_eq!(LockKeys::new("x").entry_key(0x694d_8a1c_2b3f), b"x/694d8a1c2b3f".to_vec());
    }
}
