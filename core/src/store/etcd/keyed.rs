//! Per-holder keys, shared by the RwLock (`rwlock`) and semaphore (`semaphore`) layouts:
//! each hold, and each waiting writer, is one key `PREFIX<holder id>` under an etcd lease
//! (a watchdog hold's: the client's session lease, as the lock queue's; a `ttl` hold's: one
//! of its own of the hold's length; a waiting writer's: one of its own of the queue ttl),
//! valued as the lock queue's keys are (`{"holder","count","ttl"}`, count 0 while waiting). The holder id is in the
//! key, so every step on one hold (re-entry, renewal, release, release by permit id from
//! another process) reads or writes that key alone.
//!
//! A hold's fencing token is the revision of the txn that granted it: the key's create
//! revision when it was created granted, the revision of its promotion for a writer that
//! waited (its mod revision then). A later rewrite of a granted key (re-entry, a partial
//! release, a lease move) keeps the token in the value's `token`. etcd's revision is global,
//! so every grant's token is above every earlier one of any name.

use std::sync::Arc;
use std::time::Duration;

use crate::rt::Instant;
use async_trait::async_trait;

use super::keys::{Value, encode, secs};
use super::local::Local;
use super::session::Session;
use super::transport::{Compare, Kv, Range, RangeResp, Transport, Txn, TxnOp, WatchStream};
use crate::error::{Error, Result};
use crate::inspect::Holder;
use crate::state::{Attempt, Released};
use crate::store::Subscription;
use crate::token::FencingToken;

/// How many times one step re-reads after losing a race before giving up.
pub(crate) const RACES: usize = 64;

pub(crate) fn raced() -> Error {
    Error::backend("etcd: too many conflicting updates of one name in a row")
}

/// One key under a prefix.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub(crate) kv: Kv,
    /// `None` for a key baton did not write (it counts as someone's hold of one).
    pub(crate) value: Option<Value>,
}

impl Held {
    pub(crate) fn is(&self, holder: &str) -> bool {
        self.value.as_ref().is_some_and(|v| v.holder == holder)
    }

    /// A hold, not a waiting writer.
    pub(crate) fn granted(&self) -> bool {
        self.value.as_ref().is_none_or(|v| v.count > 0)
    }

    pub(crate) fn count(&self) -> u32 {
        self.value.as_ref().map_or(1, |v| v.count)
    }

    pub(crate) fn create(&self) -> i64 {
        self.kv.create_revision
    }

    pub(crate) fn token(&self) -> u64 {
        let t = match &self.value {
            Some(v) => v.token.unwrap_or(self.kv.mod_revision),
            None => self.kv.create_revision,
        };
        u64::try_from(t).unwrap_or(0)
    }

    pub(crate) fn owner(&self) -> String {
        match &self.value {
            Some(v) => v.holder.clone(),
            None => format!("etcd:{}", String::from_utf8_lossy(&self.kv.key)),
        }
    }

    /// How `inspect` shows the hold, with what is left of its lease (`lease_left`).
    pub(crate) fn holder(&self, mode: &'static str, lease_left: Option<Duration>) -> Holder {
        Holder {
            owner: self.owner(),
            mode,
            count: self.count(),
            token: FencingToken::new(self.token()),
            lease_left,
            value: None,
        }
    }
}

/// `inspect`'s holders, each with what etcd says is left of its lease (whole seconds,
/// rounded down, and 100 ms for the last second: an explicit-ttl holder's timer asks again
/// rather than count on more, so its lost signal follows the key's end by ≤ 100 ms). A
/// `PermitSemaphore::update_lease` from another process moves the lease, so the holder's
/// own deadline is not the whole story.
pub(crate) async fn holders<'a>(
    t: &dyn Transport,
    hs: impl Iterator<Item = (&'a Held, &'static str)>,
) -> Result<Vec<Holder>> {
    let hs: Vec<_> = hs.collect();
    let left = futures_util::future::join_all(hs.iter().map(|(h, _)| t.lease_ttl(h.kv.lease))).await;
    hs.iter()
        .zip(left)
        .map(|((h, mode), left)| {
            // Less than a second left (etcd says 0 while the key still exists): asked
            // again in 100 ms rather than reported as gone.
            let left = match u64::try_from(left?).unwrap_or(0) {
                0 => Duration::from_millis(100),
                s => Duration::from_secs(s),
            };
            Ok(h.holder(mode, Some(left)))
        })
        .collect()
}

/// A baton key of `holder` under `prefix` as a read would return it (unit tests).
#[cfg(test)]
pub(crate) fn test_held(prefix: &[u8], holder: &str, count: u32, rev: i64) -> Held {
    let value = Value { holder: holder.into(), count, ttl: 5, token: None, permits: None };
    let kv =
        Kv { key: key_of(prefix, holder), value: encode(&value), create_revision: rev, mod_revision: rev, lease: 1 };
    Held { kv, value: Some(value) }
}

pub(crate) fn key_of(prefix: &[u8], holder: &str) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(holder.as_bytes());
    k
}

/// The keys of a range, oldest (lowest create revision) first.
pub(crate) fn parse(r: &RangeResp) -> Vec<Held> {
    let mut out: Vec<Held> = r
        .kvs
        .iter()
        .map(|kv| Held { value: serde_json::from_slice::<Value>(&kv.value).ok(), kv: kv.clone() })
        .collect();
    out.sort_by_key(Held::create);
    out
}

/// The keys under each of `prefixes`, the recorded last token (`fence`), and the revision
/// of the read, in one txn.
pub(crate) async fn read(t: &dyn Transport, prefixes: &[&[u8]], fence: &[u8]) -> Result<(Vec<Vec<Held>>, u64, i64)> {
    let mut success: Vec<TxnOp> = prefixes.iter().map(|p| TxnOp::Range(Range::prefix(p))).collect();
    success.push(TxnOp::Range(Range::key(fence)));
    let resp = t.txn(Txn { compare: vec![], success, failure: vec![] }).await?;
    let all = (0..prefixes.len()).map(|i| resp.range(i).map(parse).unwrap_or_default()).collect();
    let last = resp
        .range(prefixes.len())
        .and_then(|r| r.kvs.first())
        .and_then(|kv| std::str::from_utf8(&kv.value).ok()?.parse::<u64>().ok())
        .unwrap_or(0);
    Ok((all, last, resp.revision))
}

/// The lease a hold of `lease_ms` goes under: the client's session lease of that length
/// for a watchdog hold (as the lock queue's: no grant per hold, one keep-alive for all),
/// else a new lease of its own.
struct HoldLease {
    lease: i64,
    session: Option<Arc<Session>>,
}

impl HoldLease {
    async fn get(t: &dyn Transport, local: &Local, lease_ms: u64, watchdog: bool) -> Result<HoldLease> {
        let ttl = secs(lease_ms);
        if watchdog {
            let s = local.sessions.get(ttl).await?;
            return Ok(HoldLease { lease: s.lease, session: Some(s) });
        }
        Ok(HoldLease { lease: t.lease_grant(ttl).await?, session: None })
    }

    /// The txn under it wrote nothing: a lease of its own is ended (bookkeeping only).
    async fn unused(&self, t: &dyn Transport) -> Result<()> {
        if self.session.is_none() {
            t.lease_revoke(self.lease).await?;
        }
        Ok(())
    }

    /// Runs `txn` under it. `Ok(None)`: the txn failed on a session lease etcd no longer
    /// knows (the process was paused past it): the session is given up, the step is tried
    /// again under a new one. A txn whose compare failed ends a lease of its own.
    async fn txn(&self, t: &dyn Transport, txn: Txn) -> Result<Option<i64>> {
        match t.txn(txn).await {
            Ok(r) if r.succeeded => Ok(Some(r.revision)),
            Ok(_) => self.unused(t).await.map(|()| None),
            Err(e) => match &self.session {
                Some(s) if e.message().contains("lease not found") => {
                    s.give_up();
                    Ok(None)
                }
                _ => {
                    let _ = self.unused(t).await;
                    Err(e)
                }
            },
        }
    }
}

/// Creates `key` for `holder`, granted with `count` under a hold lease of `lease_ms`
/// (`HoldLease`), when it is absent and `guards` hold; the token (its create revision) when
/// it did.
pub(crate) async fn create(
    t: &dyn Transport,
    local: &Local,
    key: &[u8],
    (holder, count, permits): (&str, u32, Option<u32>),
    (lease_ms, watchdog): (u64, bool),
    guards: Vec<Compare>,
) -> Result<Option<u64>> {
    let hl = HoldLease::get(t, local, lease_ms, watchdog).await?;
    let value = Value { holder: holder.to_owned(), count, ttl: secs(lease_ms), token: None, permits };
    let mut compare = guards;
    compare.push(Compare::create(key, 0));
    let txn = Txn {
        compare,
        success: vec![TxnOp::Put { key: key.to_vec(), value: encode(&value), lease: Some(hl.lease) }],
        failure: vec![],
    };
    Ok(hl.txn(t, txn).await?.map(|rev| u64::try_from(rev).unwrap_or(0)))
}

/// Creates a waiting key (count 0) for `holder` under a new lease of the queue ttl: a
/// waiter that vanished is skipped when it ends. The lease is remembered (under `prefix`)
/// before the key exists, so that a `leave_queue` racing this attempt ends it. False
/// when the key already existed.
pub(crate) async fn enqueue(
    t: &dyn Transport,
    local: &Local,
    prefix: &[u8],
    holder: &str,
    queue_ttl_ms: u64,
) -> Result<bool> {
    let key = key_of(prefix, holder);
    let key = key.as_slice();
    let ttl = secs(queue_ttl_ms);
    let lease = t.lease_grant(ttl).await?;
    local.remember(prefix, holder, lease);
    let value = Value { holder: holder.to_owned(), count: 0, ttl, token: None, permits: None };
    let txn = Txn {
        compare: vec![Compare::create(key, 0)],
        success: vec![TxnOp::Put { key: key.to_vec(), value: encode(&value), lease: Some(lease) }],
        failure: vec![],
    };
    let ok = t.txn(txn).await?.succeeded;
    if !ok {
        local.forget(prefix, holder, lease);
        t.lease_revoke(lease).await?;
    }
    Ok(ok)
}

/// Rewrites `h` with `value` (and `lease`, else the same one) if nobody changed it since
/// it was read; the txn's revision when it did.
async fn rewrite(t: &dyn Transport, h: &Held, value: &Value, lease: Option<i64>) -> Result<Option<i64>> {
    let resp = t.txn(rewrite_txn(h, value, lease)).await?;
    Ok(resp.succeeded.then_some(resp.revision))
}

fn rewrite_txn(h: &Held, value: &Value, lease: Option<i64>) -> Txn {
    Txn {
        compare: vec![
            Compare::create(&h.kv.key, h.kv.create_revision),
            Compare::modified(&h.kv.key, h.kv.mod_revision),
        ],
        success: vec![TxnOp::Put { key: h.kv.key.clone(), value: encode(value), lease }],
        failure: vec![],
    }
}

/// Grants the waiting key `h` in place, moved to a hold lease of `lease_ms`
/// (`HoldLease`); its token is this txn's revision. `None`: it changed meanwhile (read
/// again).
pub(crate) async fn promote(
    t: &dyn Transport,
    local: &Local,
    prefix: &[u8],
    h: &Held,
    (lease_ms, watchdog): (u64, bool),
) -> Result<Option<Attempt>> {
    let Some(v) = h.value.clone() else { return Ok(None) };
    let hl = HoldLease::get(t, local, lease_ms, watchdog).await?;
    let value = Value { count: 1, ttl: secs(lease_ms), token: None, ..v.clone() };
    let Some(rev) = hl.txn(t, rewrite_txn(h, &value, Some(hl.lease))).await? else { return Ok(None) };
    // The queue lease has no key left and runs out on its own (≤ the queue ttl).
    local.forget(prefix, &v.holder, h.kv.lease);
    Ok(Some(Attempt::Granted { token: u64::try_from(rev).unwrap_or(0), count: 1, fresh: true }))
}

/// Re-entry of the granted `h`: count + 1, same token. `None`: raced.
pub(crate) async fn reenter(t: &dyn Transport, h: &Held) -> Result<Option<Attempt>> {
    let Some(v) = h.value.clone() else { return Ok(None) };
    let count = v.count.checked_add(1).ok_or_else(|| Error::invalid_argument("hold count overflow"))?;
    let token = h.token();
    let value = Value { count, token: Some(i64::try_from(token).unwrap_or(0)), ..v };
    Ok(rewrite(t, h, &value, None).await?.map(|_| Attempt::Granted { token, count, fresh: false }))
}

/// `holder`'s key when it is baton's, granted or waiting.
async fn own(t: &dyn Transport, key: &[u8], holder: &str) -> Result<Option<Held>> {
    let r = t.range(Range::key(key)).await?;
    Ok(parse(&r).into_iter().find(|h| h.is(holder)))
}

/// Keeps `holder`'s hold for `lease_ms` more: a keep-alive of its lease (this client's
/// session's shared one when the hold is under it), or a move to a new lease of its own
/// when the length changed. False when it holds nothing (released, by id elsewhere too).
pub(crate) async fn renew(t: &dyn Transport, local: &Local, key: &[u8], holder: &str, lease_ms: u64) -> Result<bool> {
    let Some(h) = own(t, key, holder).await?.filter(Held::granted) else { return Ok(false) };
    let Some(v) = h.value.clone() else { return Ok(false) };
    let ttl = secs(lease_ms);
    if v.ttl == ttl {
        if let Some(s) = local.sessions.find(h.kv.lease) {
            return s.refresh(t).await;
        }
        return Ok(t.lease_keepalive(h.kv.lease).await? > 0);
    }
    let lease = t.lease_grant(ttl).await?;
    let token = Some(i64::try_from(h.token()).unwrap_or(0));
    let moved = rewrite(t, &h, &Value { ttl, token, ..v }, Some(lease)).await?.is_some();
    // The old lease is not ended: it may be a session lease (of any client) that other
    // holds share; with no key left it runs out on its own.
    if !moved {
        t.lease_revoke(lease).await?;
    }
    Ok(moved)
}

/// Gives back `count` of `holder`'s holds (`u32::MAX`: all); the last one deletes the key
/// and records its token in `fence`.
/// A write that fails gives up the session lease the key is under (`release_failed`); a
/// read that fails, every session of the client (`release_failed_unread`).
pub(crate) async fn release(
    t: &dyn Transport,
    local: &Local,
    key: &[u8],
    fence: &[u8],
    holder: &str,
    count: u32,
) -> Result<Released> {
    for _ in 0..RACES {
        let read = own(t, key, holder).await.inspect_err(|_| local.sessions.release_failed_unread());
        let Some(h) = read?.filter(Held::granted) else { return Ok(Released::NotHeld) };
        let Some(v) = h.value.clone() else { return Ok(Released::NotHeld) };
        if count != u32::MAX && count > v.count {
            return Err(Error::invalid_argument(format!(
                "cannot release {count} permits: this holder holds {}",
                v.count
            )));
        }
        let token = h.token();
        if count != u32::MAX && count < v.count {
            let left = v.count - count;
            let value = Value { count: left, token: Some(i64::try_from(token).unwrap_or(0)), ..v };
            let put = rewrite(t, &h, &value, None).await;
            if put.inspect_err(|_| local.sessions.release_failed(h.kv.lease))?.is_some() {
                return Ok(Released::StillHeld(left));
            }
            continue;
        }
        let txn = Txn {
            compare: vec![Compare::modified(key, h.kv.mod_revision)],
            success: vec![
                TxnOp::Delete { key: key.to_vec() },
                TxnOp::Put { key: fence.to_vec(), value: token.to_string().into_bytes(), lease: Some(0) },
            ],
            failure: vec![],
        };
        if t.txn(txn).await.inspect_err(|_| local.sessions.release_failed(h.kv.lease))?.succeeded {
            // The hold's lease has no key left and runs out on its own.
            return Ok(Released::Freed);
        }
    }
    Err(raced())
}

/// Removes `holder`'s waiting keys by revoking the queue leases this process created them
/// under (each alone on its lease; one call each, no read). A key already granted was moved
/// off its queue lease, so this never ends a hold; a key this process never made is not
/// its to remove.
pub(crate) async fn leave_queue(t: &dyn Transport, local: &Local, prefix: &[u8], holder: &str) -> Result<()> {
    for lease in local.take(prefix, holder) {
        t.lease_revoke(lease).await?;
    }
    Ok(())
}

/// Refreshes a waiting key's queue lease (the waiter's attempts keep its place).
pub(crate) async fn refresh(t: &dyn Transport, h: &Held) -> Result<()> {
    t.lease_keepalive(h.kv.lease).await.map(drop)
}

/// What a waiter waits on: the one key whose change may let it in.
#[async_trait]
pub(crate) trait Blocker: Send + Sync + 'static {
    /// The key to watch, and whether only its deletion counts (else any change); `None`
    /// when nothing blocks any more (the engine attempts again at once).
    async fn blocking(&self, t: &dyn Transport) -> Result<Option<(Vec<u8>, bool)>>;
}

/// A waiter's subscription: each wait reads what blocks it and watches that one key, from
/// the read on (no herd of every waiter on every change, no polling).
pub(crate) struct WaitSub<B> {
    pub(crate) t: Arc<dyn Transport>,
    pub(crate) blocker: B,
    /// The watch of the last wait and its key: kept while the key stays the same.
    pub(crate) watch: Option<(Vec<u8>, Box<dyn WatchStream>)>,
}

impl<B: Blocker> WaitSub<B> {
    pub(crate) fn new(t: Arc<dyn Transport>, blocker: B) -> WaitSub<B> {
        WaitSub { t, blocker, watch: None }
    }

    async fn wait(&mut self, until: Instant) -> Result<()> {
        let Some((key, deletes)) = self.blocker.blocking(&*self.t).await? else { return Ok(()) };
        // A watch kept from the last wait holds every event since it was opened. A new one
        // starts from now (a catch-up watch is served by etcd's 100 ms sync loop), and a
        // read after it is confirmed covers what happened since the blocker's read.
        let mut w = match self.watch.take() {
            Some((k, w)) if k == key => w,
            _ => {
                let w = self.t.watch(Range::key(&key), None).await?;
                if self.t.range(Range::key(&key)).await?.kvs.is_empty() {
                    return Ok(());
                }
                w
            }
        };
        // Bounded by `until`; each turn is one batch of events.
        loop {
            match w.next(until).await? {
                None => {
                    self.watch = Some((key, w));
                    return Ok(());
                }
                Some(evs) if !deletes || evs.iter().any(|e| e.delete) => return Ok(()),
                Some(_) => {}
            }
        }
    }
}

#[async_trait]
impl<B: Blocker> Subscription for WaitSub<B> {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        if self.wait(until).await.is_err() {
            self.watch = None;
            super::watch::pause(until).await;
        }
        Ok(())
    }
}
