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
//!
//! `queue` holds the steps, `handoff` the grant of a waiter woken by its predecessor's
//! going, `super::local` what this process remembers of its own contenders,
//! `super::keys` the keys and values the lock layouts share.

mod handoff;
mod queue;

pub(crate) use self::queue::{acquire, leave_queue, release, renew};
use super::keys::{Entry, LockKeys, Value, encode, entries, two_schemes};
use super::transport::{Compare, Kv, Range, Transport, Txn, TxnOp, TxnResp};
use crate::error::Result;

/// The contenders, the bare key `NAME` (`?scheme=txn`'s lock) and the recorded last token,
/// in one read.
pub(crate) async fn read(t: &dyn Transport, keys: &LockKeys) -> Result<(Vec<Entry>, Option<Kv>, u64)> {
    let txn = Txn {
        compare: vec![],
        success: vec![
            TxnOp::Range(Range::prefix(&keys.prefix)),
            TxnOp::Range(Range::key(&keys.fence)),
            TxnOp::Range(Range::key(keys.bare())),
        ],
        failure: vec![],
    };
    let resp = t.txn(txn).await?;
    let es = resp.range(0).map(|r| entries(keys, r)).unwrap_or_default();
    let fence = resp
        .range(1)
        .and_then(|r| r.kvs.first())
        .and_then(|kv| std::str::from_utf8(&kv.value).ok()?.parse::<u64>().ok())
        .unwrap_or(0);
    let bare = resp.range(2).and_then(|r| r.kvs.first()).cloned();
    Ok((es, bare, fence))
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

/// The grant of the waiter key `kv`: rewritten as held (under `lease`; `None` keeps its
/// lease), same create revision, and its token recorded; only while it is still there.
pub(super) fn grant_txn(keys: &LockKeys, kv: &Kv, value: &Value, lease: Option<i64>) -> Txn {
    Txn {
        // And no bare key (`two_schemes`); when the txn fails, the read says whether one was there.
        compare: vec![Compare::create(&kv.key, kv.create_revision), Compare::create(keys.bare(), 0)],
        success: vec![
            TxnOp::Put { key: kv.key.clone(), value: encode(value), lease },
            TxnOp::Put { key: keys.fence.clone(), value: kv.create_revision.to_string().into_bytes(), lease: Some(0) },
        ],
        failure: vec![TxnOp::Range(Range::key(keys.bare()))],
    }
}

/// Refused when the txn response `resp`'s range `i` found the bare key (see `two_schemes`).
pub(super) fn no_bare_key(keys: &LockKeys, resp: &TxnResp, i: usize) -> Result<()> {
    match resp.range(i) {
        Some(r) if !r.kvs.is_empty() => Err(two_schemes(&String::from_utf8_lossy(keys.bare()), true)),
        _ => Ok(()),
    }
}
