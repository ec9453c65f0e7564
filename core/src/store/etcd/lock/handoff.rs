//! The hand-off grant: a waiter woken by the going of its predecessor, the head, is
//! granted without a round trip while its queue lease surely lives, and its key moves to
//! the session lease in the background.

use std::sync::Arc;
use std::time::Duration;

use crate::rt::Instant;

use tokio::sync::watch;

use super::grant_txn;
use crate::error::Result;
use crate::state::{Attempt, Request};
use crate::store::etcd::keys::{Entry, LockKeys, Value, encode, secs};
use crate::store::etcd::local::{Local, Moved, Moving};
use crate::store::etcd::session::Session;
use crate::store::etcd::transport::{Kv, Transport, Txn};

/// The hand-off grant of a watchdog waiter whose predecessor was the head and went: it is
/// the head now (keys only join at the back), and its key lives on its queue lease at
/// least until that lease's last keep-alive (or grant) was sent plus its ttl. With room
/// left on that, it is granted at once, with no round trip; its key moves to the session
/// lease right after, in the background (the same txn as `queue::promote`), which must land before
/// that time: else, or when it finds the key gone, the hold is lost and its next renewal
/// says so. `None`: no such room known; the caller grants by writing first.
pub(super) async fn handoff(
    local: &Local,
    keys: &LockKeys,
    req: &Request,
    e: &Entry,
    v: Value,
) -> Result<Option<Attempt>> {
    // Room for the move (one txn, retried on another endpoint when one fails).
    const ROOM: Duration = Duration::from_secs(1);
    let Some(safe_until) = local.alive_until(&keys.prefix, &req.holder, e.kv.lease) else { return Ok(None) };
    let ttl = secs(req.lease_ms);
    let s = local.sessions.get(ttl).await?;
    if e.kv.lease == s.lease || safe_until.saturating_duration_since(Instant::now()) < ROOM {
        return Ok(None);
    }
    let value = Value { count: 1, ttl, ..v };
    let txn = grant_txn(keys, &e.kv, &value, Some(s.lease));
    let (tx, rx) = watch::channel(Moved::Pending);
    let kv = Kv { value: encode(&value), lease: s.lease, ..e.kv.clone() };
    local.moving(&keys.prefix, &req.holder, Moving { rx, safe_until, kv });
    crate::rt::spawn(move_key(local.sessions.transport(), s, txn, safe_until, tx));
    // The queue lease is no longer this waiter's to give back: revoking it now would
    // delete the key before it moved.
    local.forget(&keys.prefix, &req.holder, e.kv.lease);
    local.busy(&keys.prefix, true);
    Ok(Some(Attempt::Granted { token: u64::try_from(e.kv.create_revision).unwrap_or(0), count: 1, fresh: true }))
}

/// Moves a hand-off grant's key to the session lease (`txn`, from `grant_txn`); retried
/// on connection failures until `until`, when the key could end with its queue lease.
async fn move_key(t: Arc<dyn Transport>, s: Arc<Session>, txn: Txn, until: Instant, tx: watch::Sender<Moved>) {
    let deadline = until;
    // Bounded by `until`: every turn waits at most until then.
    let out = loop {
        match crate::rt::timeout_at(deadline, t.txn(txn.clone())).await {
            Ok(Ok(r)) if r.succeeded => break Moved::Done(r.revision),
            // The key is gone (its lease ended, or it was deleted by hand).
            Ok(Ok(_)) => break Moved::Failed,
            Ok(Err(e)) if e.kind() == crate::error::ErrorKind::Connection => {
                crate::rt::sleep_until(deadline.min(Instant::now() + Duration::from_millis(50))).await;
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
