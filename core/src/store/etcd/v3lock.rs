//! `?scheme=v3lock`: etcd's own lock service (`v3lockpb.Lock`/`Unlock`, what
//! `etcdctl lock` and the gateway's `/v3/lock/lock` use). The server runs
//! `concurrency.Mutex` on `NAME/` with the lease the client gives: the layout is the
//! queue's (`NAME/<lease hex>`, lowest create revision holds), so it contends with the
//! default scheme and with `etcdctl lock`; the token is the key's create revision.
//!
//! The service writes an empty value and blocks until the lock is held, so baton keeps
//! what it needs in this process: each hold's key, lease, token and count. Hence: Lock
//! only; a hold is released, renewed or re-entered by the process that took it; a
//! contended attempt does not block in the service (which would overshoot the caller's
//! timeout) but reports busy when `NAME/` has a key, and waits on its watch like any
//! waiter; no queue order (not a `FairLock`).

use crate::sync::LockExt;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::keys::{secs, two_schemes};
use super::transport::{Compare, Range, Transport, Txn, TxnOp};
use crate::error::{Error, Result};
use crate::state::{Attempt, Mode, Released, Request};

/// How long an attempt on a free-looking lock lets the service wait (a contender that
/// got in between the read and the call is waited for this long at most).
const RACE_WAIT: Duration = Duration::from_secs(2);

/// One hold of this process.
#[derive(Debug, Clone)]
struct Hold {
    key: Vec<u8>,
    lease: i64,
    ttl: i64,
    token: u64,
    count: u32,
}

/// The holds of this process, by name and holder.
#[derive(Debug, Default)]
pub(crate) struct Holds(Mutex<HashMap<(String, String), Hold>>);

impl Holds {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<(String, String), Hold>) -> R) -> R {
        f(&mut self.0.locked())
    }
}

fn id(name: &str, holder: &str) -> (String, String) {
    (name.to_owned(), holder.to_owned())
}

impl Holds {
    /// The holder and count of this process's hold by `key`, if it is one.
    pub(crate) fn describe(&self, key: &[u8]) -> Option<(String, u32)> {
        self.with(|m| m.iter().find(|(_, h)| h.key == key).map(|((_, holder), h)| (holder.clone(), h.count)))
    }
}

/// One acquire attempt.
pub(crate) async fn acquire(t: &dyn Transport, holds: &Holds, name: &str, req: &Request) -> Result<Attempt> {
    if req.mode == Mode::Fair {
        return Err(Error::unsupported(format!(
            "fair lock `{name}`: etcd's lock service (`?scheme=v3lock`) has plain locks only; use the default scheme"
        )));
    }
    let again = holds.with(|m| {
        m.get_mut(&id(name, &req.holder)).map(|h| {
            h.count = h.count.saturating_add(1);
            (h.token, h.count)
        })
    });
    if let Some((token, count)) = again {
        return Ok(Attempt::Granted { token, count, fresh: false });
    }
    let prefix = format!("{name}/").into_bytes();
    if !t.range(Range::prefix(&prefix)).await?.kvs.is_empty() {
        return Ok(Attempt::Busy { retry_ms: None });
    }
    let ttl = secs(req.lease_ms);
    let lease = t.lease_grant(ttl).await?;
    let key = match t.lock(name.as_bytes(), lease, RACE_WAIT).await {
        Ok(Some(key)) => key,
        other => {
            // Not granted in time (or failed): ending the lease takes its waiting key.
            t.lease_revoke(lease).await?;
            return other.map(|_| Attempt::Busy { retry_ms: None });
        }
    };
    // The granted key, and `?scheme=txn`'s bare key: the service does not look at it, so a
    // grant while it exists is given back (see `keys::two_schemes`). No bare key at this
    // read means none since the grant: the txn scheme takes it only while `NAME/` is empty.
    let read = Txn {
        compare: vec![],
        success: vec![TxnOp::Range(Range::key(&key)), TxnOp::Range(Range::key(name.as_bytes()))],
        failure: vec![],
    };
    let resp = t.txn(read).await?;
    if resp.range(1).is_some_and(|r| !r.kvs.is_empty()) {
        t.unlock(&key).await?;
        t.lease_revoke(lease).await?;
        return Err(two_schemes(name, true));
    }
    let kv = resp.range(0).and_then(|r| r.kvs.first()).cloned();
    let Some(kv) = kv.filter(|kv| kv.lease == lease) else {
        t.lease_revoke(lease).await?;
        return Err(Error::backend("etcd: the lock service granted a key that is gone"));
    };
    let token = u64::try_from(kv.create_revision).unwrap_or(0);
    holds.with(|m| m.insert(id(name, &req.holder), Hold { key, lease, ttl, token, count: 1 }));
    Ok(Attempt::Granted { token, count: 1, fresh: true })
}

/// Keeps the hold's lease alive; a different length moves its key to a new lease.
pub(crate) async fn renew(t: &dyn Transport, holds: &Holds, name: &str, holder: &str, lease_ms: u64) -> Result<bool> {
    let Some(h) = holds.with(|m| m.get(&id(name, holder)).cloned()) else { return Ok(false) };
    let ttl = secs(lease_ms);
    if ttl == h.ttl {
        return Ok(t.lease_keepalive(h.lease).await? > 0);
    }
    let lease = t.lease_grant(ttl).await?;
    let token = i64::try_from(h.token).unwrap_or(i64::MAX);
    let txn = Txn {
        compare: vec![Compare::create(&h.key, token)],
        success: vec![TxnOp::Put { key: h.key.clone(), value: Vec::new(), lease: Some(lease) }],
        failure: vec![],
    };
    let moved = t.txn(txn).await?.succeeded;
    t.lease_revoke(if moved { h.lease } else { lease }).await?;
    if moved {
        holds.with(|m| m.insert(id(name, holder), Hold { lease, ttl, ..h }));
    }
    Ok(moved)
}

/// Gives back `count` holds (`u32::MAX`: all): the last one through the service's Unlock;
/// `fence` is where the last token is recorded.
pub(crate) async fn release(
    t: &dyn Transport,
    holds: &Holds,
    name: &str,
    fence: &[u8],
    holder: &str,
    count: u32,
) -> Result<Released> {
    let out = holds.with(|m| {
        let k = id(name, holder);
        let h = m.get_mut(&k)?;
        if count != u32::MAX && count < h.count {
            h.count -= count;
            return Some(Err(h.count));
        }
        m.remove(&k).map(Ok)
    });
    match out {
        None => Ok(Released::NotHeld),
        Some(Err(left)) => Ok(Released::StillHeld(left)),
        Some(Ok(h)) => {
            // The last token is recorded (for `inspect`) while the key is still there,
            // which also tells whether the hold is.
            let token = i64::try_from(h.token).unwrap_or(i64::MAX);
            let txn = Txn {
                compare: vec![Compare::create(&h.key, token)],
                success: vec![TxnOp::Put {
                    key: fence.to_vec(),
                    value: h.token.to_string().into_bytes(),
                    lease: Some(0),
                }],
                failure: vec![],
            };
            let held = t.txn(txn).await?.succeeded;
            if held {
                t.unlock(&h.key).await?;
            }
            // Unlock deletes the key only: the lease, with nothing left on it, goes too.
            t.lease_revoke(h.lease).await?;
            Ok(if held { Released::Freed } else { Released::NotHeld })
        }
    }
}
