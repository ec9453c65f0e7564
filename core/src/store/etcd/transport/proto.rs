//! The small transport the etcd algorithms run over: ranges, transactions, leases and
//! watches, in plain data. The gRPC transport (`etcd://`) and the JSON-gateway transport
//! (`etcd+http://`, the one a wasm build can drive with `fetch`) both implement it; the
//! lock queue and the state store above are written once against it and do no I/O of
//! their own.

use crate::rt::Instant;
use async_trait::async_trait;

use crate::error::Result;

/// One key-value as etcd reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Kv {
    pub(crate) key: Vec<u8>,
    pub(crate) value: Vec<u8>,
    pub(crate) create_revision: i64,
    pub(crate) mod_revision: i64,
    pub(crate) lease: i64,
}

/// A range read: one key, or every key from `key` to `range_end` (exclusive).
#[derive(Debug, Clone, Default)]
pub(crate) struct Range {
    pub(crate) key: Vec<u8>,
    pub(crate) range_end: Option<Vec<u8>>,
    /// Ascending by create revision (the lock queue's order) instead of by key.
    pub(crate) by_create: bool,
}

impl Range {
    pub(crate) fn key(key: &[u8]) -> Range {
        Range { key: key.to_vec(), range_end: None, by_create: false }
    }

    /// Every key under `prefix`, oldest first.
    pub(crate) fn prefix(prefix: &[u8]) -> Range {
        Range { key: prefix.to_vec(), range_end: Some(prefix_end(prefix)), by_create: true }
    }
}

/// The end of the range of keys starting with `prefix` (its last byte + 1, as clientv3's
/// `GetPrefixRangeEnd`).
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte was 0xff: to the end of the keyspace.
    vec![0]
}

/// The answer to a range.
#[derive(Debug, Clone, Default)]
pub(crate) struct RangeResp {
    /// The store revision the read saw.
    pub(crate) revision: i64,
    pub(crate) kvs: Vec<Kv>,
}

/// What a compare looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Create,
    Mod,
}

/// One txn guard: `target(key) == value` (or `< value` when `less`; a missing key has
/// revision 0); over a range, every key in it must match (an empty range compares as one
/// missing key).
#[derive(Debug, Clone)]
pub(crate) struct Compare {
    pub(crate) key: Vec<u8>,
    pub(crate) range_end: Option<Vec<u8>>,
    pub(crate) target: Target,
    pub(crate) value: i64,
    pub(crate) less: bool,
}

impl Compare {
    pub(crate) fn create(key: &[u8], rev: i64) -> Compare {
        Compare { key: key.to_vec(), range_end: None, target: Target::Create, value: rev, less: false }
    }
    pub(crate) fn modified(key: &[u8], rev: i64) -> Compare {
        Compare { key: key.to_vec(), range_end: None, target: Target::Mod, value: rev, less: false }
    }
    /// No key under `prefix`.
    pub(crate) fn none_under(prefix: &[u8]) -> Compare {
        Compare { range_end: Some(prefix_end(prefix)), ..Compare::create(prefix, 0) }
    }
    /// No key under `prefix` was created after revision `rev`.
    pub(crate) fn none_created_under_since(prefix: &[u8], rev: i64) -> Compare {
        Compare { range_end: Some(prefix_end(prefix)), less: true, ..Compare::create(prefix, rev.saturating_add(1)) }
    }
    /// No key under `prefix` was created or rewritten after revision `rev` (deletions
    /// pass: they only ever free something).
    pub(crate) fn unchanged_under_since(prefix: &[u8], rev: i64) -> Compare {
        Compare { range_end: Some(prefix_end(prefix)), less: true, ..Compare::modified(prefix, rev.saturating_add(1)) }
    }
}

/// One txn operation.
#[derive(Debug, Clone)]
pub(crate) enum TxnOp {
    /// A put; `lease: None` keeps the key's current lease (`ignore_lease`).
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
        lease: Option<i64>,
    },
    Delete {
        key: Vec<u8>,
    },
    Range(Range),
}

/// A transaction: if every compare holds, `success`, else `failure`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Txn {
    pub(crate) compare: Vec<Compare>,
    pub(crate) success: Vec<TxnOp>,
    pub(crate) failure: Vec<TxnOp>,
}

/// The answer to one txn operation.
#[derive(Debug, Clone)]
pub(crate) enum OpResp {
    Range(RangeResp),
    Put,
    Delete,
}

/// The answer to a txn.
#[derive(Debug, Clone, Default)]
pub(crate) struct TxnResp {
    pub(crate) succeeded: bool,
    /// The store revision after the txn (its own revision when it wrote).
    pub(crate) revision: i64,
    pub(crate) responses: Vec<OpResp>,
}

impl TxnResp {
    /// The `i`th response, when it is a range.
    pub(crate) fn range(&self, i: usize) -> Option<&RangeResp> {
        match self.responses.get(i) {
            Some(OpResp::Range(r)) => Some(r),
            _ => None,
        }
    }
}

/// One watch event.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) delete: bool,
}

/// A live watch; dropping it cancels it.
#[async_trait]
pub(crate) trait WatchStream: Send {
    /// The next batch of events, or `Ok(None)` when `until` passes first.
    async fn next(&mut self, until: Instant) -> Result<Option<Vec<Event>>>;
}

/// What the etcd algorithms need from a connection.
#[async_trait]
pub(crate) trait Transport: Send + Sync + std::fmt::Debug + 'static {
    async fn range(&self, r: Range) -> Result<RangeResp>;
    async fn txn(&self, t: Txn) -> Result<TxnResp>;
    /// Grants a lease of `ttl_s` seconds (etcd raises it to its minimum, 2 s by default);
    /// returns its id.
    async fn lease_grant(&self, ttl_s: i64) -> Result<i64>;
    /// One keep-alive; returns the lease's new TTL in seconds, 0 when the lease is gone.
    async fn lease_keepalive(&self, id: i64) -> Result<i64>;
    /// The lease's remaining time in whole seconds, rounded down (etcd ends it within
    /// one more second); 0 or less when it is gone.
    async fn lease_ttl(&self, id: i64) -> Result<i64>;
    /// Revokes a lease (its keys go at once); a lease already gone is not an error.
    async fn lease_revoke(&self, id: i64) -> Result<()>;
    /// Watches `r` (one key or a prefix) for changes after revision `after`, or from now
    /// on (`None`). Returns once etcd confirmed the watch: a change made after this returns
    /// is delivered. (A watch that must catch up on history is served by etcd's 100 ms
    /// sync loop, so waiters watch from now and read once more instead.)
    async fn watch(&self, r: Range, after: Option<i64>) -> Result<Box<dyn WatchStream>>;
    /// etcd's lock service (`v3lockpb.Lock`): `name` held under `lease`, the key it holds
    /// by; `None` when not granted within `wait` (the call is cancelled, which takes the
    /// service's waiting key away).
    async fn lock(&self, name: &[u8], lease: i64, wait: std::time::Duration) -> Result<Option<Vec<u8>>>;
    /// `v3lockpb.Unlock`: deletes the key a `lock` returned.
    async fn unlock(&self, key: &[u8]) -> Result<()>;
    async fn close(&self) {}
}

/// The endpoint failover of both transports: tries `f` on each endpoint in turn, from the
/// one that answered last (`current`); a `Connection` error moves on to the next, any
/// other answer is final. `store` names the store in the error when there is none.
pub(crate) async fn each_endpoint<T, F, Fut>(
    current: &std::sync::atomic::AtomicUsize,
    n: usize,
    store: &str,
    mut f: F,
) -> Result<T>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    use std::sync::atomic::Ordering::Relaxed;
    let start = current.load(Relaxed);
    let mut last = None;
    for i in 0..n {
        let idx = (start + i) % n;
        match f(idx).await {
            Ok(v) => {
                if i > 0 {
                    current.store(idx, Relaxed);
                }
                return Ok(v);
            }
            Err(e) if e.kind() == crate::error::ErrorKind::Connection => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| crate::error::Error::connection(format!("{store}: no endpoint"))))
}
