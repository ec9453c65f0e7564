//! `?scheme=txn`: the one-shot try-lock of many Go services: the bare
//! key `NAME`, created under a lease by a txn guarded on `create_revision(NAME) == 0`
//! (`Else Get(NAME)`: who holds it). No queue: every waiter watches the key and retries
//! when it is deleted (a herd, and no order: a `FairLock` is not fair here). The token is
//! the key's create revision; the value is baton's `{"holder","count","ttl"}` (a Go
//! client writes its own value, shown as a foreign holder).

use super::keys::{LockKeys, Value, encode, entries, secs, two_schemes};
use super::transport::{Compare, Kv, Range, Transport, Txn, TxnOp};
use crate::error::{Error, Result};
use crate::state::{Attempt, Released, Request};

/// How many times one step re-reads after losing a race before giving up.
const RACES: usize = 64;

/// The key of a lock name, where its last token is recorded, and the lock queue's keys of
/// the same name (checked by every grant: see `keys::two_schemes`).
#[derive(Debug, Clone)]
pub(crate) struct TxnKeys {
    pub(crate) key: Vec<u8>,
    /// Its `fence` is this lock's too: one token sequence per name, whichever scheme.
    queue: LockKeys,
}

impl TxnKeys {
    pub(crate) fn new(name: &str) -> TxnKeys {
        TxnKeys { key: name.as_bytes().to_vec(), queue: LockKeys::new(name) }
    }

    /// What identifies one holder's steps on this lock (one at a time per process).
    pub(crate) fn own(&self, holder: &str) -> Vec<u8> {
        let mut k = b"txn\0".to_vec();
        k.extend_from_slice(&self.key);
        k.push(0);
        k.extend_from_slice(holder.as_bytes());
        k
    }

    fn name(&self) -> String {
        String::from_utf8_lossy(&self.key).into_owned()
    }
}

fn value(kv: &Kv) -> Option<Value> {
    serde_json::from_slice(&kv.value).ok()
}

fn token(kv: &Kv) -> u64 {
    u64::try_from(kv.create_revision).unwrap_or(0)
}

/// One attempt: take the key if nobody has it, re-enter if this holder has it.
pub(crate) async fn acquire(t: &dyn Transport, keys: &TxnKeys, req: &Request) -> Result<Attempt> {
    for _ in 0..RACES {
        // The key and the lock queue of the same name, at one revision.
        let read = Txn {
            compare: vec![],
            success: vec![TxnOp::Range(Range::key(&keys.key)), TxnOp::Range(Range::prefix(&keys.queue.prefix))],
            failure: vec![],
        };
        let r = t.txn(read).await?;
        if let Some(kv) = r.range(0).and_then(|r| r.kvs.first()) {
            let Some(v) = value(kv).filter(|v| v.holder == req.holder) else {
                return Ok(Attempt::Busy { retry_ms: None });
            };
            let count = v.count.checked_add(1).ok_or_else(|| Error::invalid_argument("hold count overflow"))?;
            let txn = Txn {
                compare: vec![Compare::modified(&kv.key, kv.mod_revision)],
                success: vec![TxnOp::Put { key: kv.key.clone(), value: encode(&Value { count, ..v }), lease: None }],
                failure: vec![],
            };
            if t.txn(txn).await?.succeeded {
                return Ok(Attempt::Granted { token: token(kv), count, fresh: false });
            }
            continue;
        }
        if r.range(1).is_some_and(|q| !entries(&keys.queue, q).is_empty()) {
            return Err(two_schemes(&keys.name(), false));
        }
        let ttl = secs(req.lease_ms);
        let lease = t.lease_grant(ttl).await?;
        let v = Value { holder: req.holder.clone(), count: 1, ttl, token: None, permits: None };
        // The try-lock's txn: If(CreateRevision(key) == 0).Then(Put(key, lease)).Else(Get(key)),
        // and no queue key created since the read (it found none: keys under `NAME/` then
        // are other names', `NAME/x/…`).
        let txn = Txn {
            compare: vec![
                Compare::create(&keys.key, 0),
                Compare::none_created_under_since(&keys.queue.prefix, r.revision),
            ],
            success: vec![TxnOp::Put { key: keys.key.clone(), value: encode(&v), lease: Some(lease) }],
            failure: vec![TxnOp::Range(Range::key(&keys.key))],
        };
        let resp = t.txn(txn).await?;
        if resp.succeeded {
            return Ok(Attempt::Granted { token: u64::try_from(resp.revision).unwrap_or(0), count: 1, fresh: true });
        }
        t.lease_revoke(lease).await?;
        match resp.range(0).and_then(|r| r.kvs.first()).map(value) {
            // Someone got the key first: this holder (a concurrent step of it) or another.
            Some(Some(v)) if v.holder == req.holder => {}
            Some(_) => return Ok(Attempt::Busy { retry_ms: None }),
            // No key: a key under `NAME/` came instead; the next read tells whose.
            None => {}
        }
    }
    Err(Error::backend("etcd: too many conflicting updates of one lock key in a row"))
}

/// The key, when `holder` holds it.
async fn mine(t: &dyn Transport, keys: &TxnKeys, holder: &str) -> Result<Option<(Kv, Value)>> {
    let r = t.range(Range::key(&keys.key)).await?;
    Ok(r.kvs.into_iter().next().and_then(|kv| value(&kv).filter(|v| v.holder == holder).map(|v| (kv, v))))
}

/// Keeps the holder's lease alive (a different length moves the key to a new lease).
pub(crate) async fn renew(t: &dyn Transport, keys: &TxnKeys, holder: &str, lease_ms: u64) -> Result<bool> {
    let Some((kv, v)) = mine(t, keys, holder).await? else { return Ok(false) };
    let ttl = secs(lease_ms);
    if v.ttl == ttl {
        return Ok(t.lease_keepalive(kv.lease).await? > 0);
    }
    let lease = t.lease_grant(ttl).await?;
    let txn = Txn {
        compare: vec![Compare::modified(&kv.key, kv.mod_revision)],
        success: vec![TxnOp::Put { key: kv.key.clone(), value: encode(&Value { ttl, ..v }), lease: Some(lease) }],
        failure: vec![],
    };
    let ok = t.txn(txn).await?.succeeded;
    t.lease_revoke(if ok { kv.lease } else { lease }).await?;
    Ok(ok)
}

/// Gives back `count` holds (`u32::MAX`: all); deleting the key wakes every waiter.
pub(crate) async fn release(t: &dyn Transport, keys: &TxnKeys, holder: &str, count: u32) -> Result<Released> {
    for _ in 0..RACES {
        let Some((kv, v)) = mine(t, keys, holder).await? else { return Ok(Released::NotHeld) };
        let (success, out) = if count != u32::MAX && count < v.count {
            let left = v.count - count;
            let put = TxnOp::Put { key: kv.key.clone(), value: encode(&Value { count: left, ..v }), lease: None };
            (vec![put], Released::StillHeld(left))
        } else {
            let fence = TxnOp::Put {
                key: keys.queue.fence.clone(),
                value: token(&kv).to_string().into_bytes(),
                lease: Some(0),
            };
            (vec![TxnOp::Delete { key: kv.key.clone() }, fence], Released::Freed)
        };
        let txn = Txn { compare: vec![Compare::modified(&kv.key, kv.mod_revision)], success, failure: vec![] };
        if t.txn(txn).await?.succeeded {
            return Ok(out);
        }
    }
    Err(Error::backend("etcd: too many conflicting updates of one lock key in a row"))
}

/// The holder, hold count and token the bare key says (a key baton did not write: a
/// foreign holder, `etcd:NAME`).
pub(crate) fn holder(kv: &Kv) -> (String, u32, u64) {
    match value(kv) {
        Some(v) => (v.holder, v.count, token(kv)),
        None => (format!("etcd:{}", String::from_utf8_lossy(&kv.key)), 1, token(kv)),
    }
}
