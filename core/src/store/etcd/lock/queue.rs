//! The steps of the lock queue: acquire (create a key, or promote the head), renew,
//! release, leave the queue.

use crate::rt::Instant;

use super::handoff::handoff;
use super::{grant_txn, no_bare_key};
use crate::error::{Error, Result};
use crate::state::{Attempt, Released, Request};
use crate::store::etcd::keys::{Entry, LockKeys, Value, encode, entries, secs};
use crate::store::etcd::local::{Local, Moved};
use crate::store::etcd::session::Session;
use crate::store::etcd::transport::{Compare, Kv, Range, RangeResp, Transport, Txn, TxnOp};

/// How many times one step re-reads after losing a race before giving up.
const RACES: usize = 64;

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
    let value = Value { holder: req.holder.clone(), count: 1, ttl, token: None, permits: None };
    let txn = Txn {
        compare: vec![Compare::none_under(&keys.prefix), Compare::create(keys.bare(), 0)],
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
            local.alive(&keys.prefix, &req.holder, e.kv.lease, sent, v.ttl);
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
        // The waiter's lease ended meanwhile: read again (a new key follows). Or the
        // name is held under `?scheme=txn`.
        if session.is_none() {
            *spare = lease;
        }
        no_bare_key(keys, &resp, 0)?;
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
        local.alive(&keys.prefix, &req.holder, lease, sent, ttl);
    }
    let key = keys.entry_key(lease);
    let value = Value { holder: req.holder.clone(), count: u32::from(expect_first), ttl, token: None, permits: None };
    let txn = Txn {
        compare: vec![Compare::create(&key, 0)],
        success: vec![
            TxnOp::Put { key: key.clone(), value: encode(&value), lease: Some(lease) },
            TxnOp::Range(Range::prefix(&keys.prefix)),
            TxnOp::Range(Range::key(keys.bare())),
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
    if let Err(e) = no_bare_key(keys, &resp, 2) {
        // The name is held under `?scheme=txn`: this key goes (its lease with it), and
        // so the txn holder's own checks never see it.
        local.forget(&keys.prefix, &req.holder, lease);
        t.lease_revoke(lease).await?;
        return Err(e);
    }
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
        let freed = t.txn(txn).await.inspect_err(|_| local.sessions.release_failed(kv.lease))?.succeeded;
        return Ok(if freed { Released::Freed } else { Released::NotHeld });
    }
    // First from what this process knows of its grant (no read); then from a read.
    let mut known = local.take_hold(&keys.prefix, holder);
    for _ in 0..RACES {
        let e = match known.take() {
            Some(kv) => Entry { value: serde_json::from_slice::<Value>(&kv.value).ok(), kv },
            None => match held(t, keys, holder).await.inspect_err(|_| local.sessions.release_failed_unread())? {
                Some(e) => e,
                None => return Ok(Released::NotHeld),
            },
        };
        let Some(v) = e.value.clone() else { return Ok(Released::NotHeld) };
        if count != u32::MAX && count < v.count {
            let left = v.count - count;
            let value = Value { count: left, ..v };
            let put = put_if_unchanged_rev(t, &e.kv, &value).await;
            if let Some(rev) = put.inspect_err(|_| local.sessions.release_failed(e.kv.lease))? {
                local.hold(&keys.prefix, holder, Kv { value: encode(&value), mod_revision: rev, ..e.kv });
                return Ok(Released::StillHeld(left));
            }
            continue;
        }
        let txn = release_txn(keys, &e.kv, Compare::modified(&e.kv.key, e.kv.mod_revision));
        if t.txn(txn).await.inspect_err(|_| local.sessions.release_failed(e.kv.lease))?.succeeded {
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
