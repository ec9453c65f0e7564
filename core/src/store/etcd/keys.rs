//! The keys and values every etcd lock layout shares: a lock name's keys (`NAME/<lease>`
//! for the lock queue, the bare `NAME` for `?scheme=txn`, `baton/lock/NAME` for the last
//! token), what baton writes in its own keys, the contenders of a range, and the refusal
//! of one name under two schemes. The lock queue (`lock`), `v3lock`, `txnlock` and the
//! keyed layouts all build on it, so none imports another's module.

use serde::{Deserialize, Serialize};

use super::transport::{Kv, RangeResp};
use crate::error::Error;

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

    /// `NAME`: `?scheme=txn`'s lock key.
    pub(crate) fn bare(&self) -> &[u8] {
        &self.prefix[..self.prefix.len() - 1]
    }

    pub(super) fn entry_key(&self, lease: i64) -> Vec<u8> {
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
    /// A semaphore permit key's record of the semaphore's size (`crate::state::check_size`);
    /// absent in every other key and in permit keys written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) permits: Option<u32>,
}

/// One contender under `NAME/`, oldest first.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) kv: Kv,
    /// `None` for a key baton did not write (`etcdctl lock`, a Go service).
    pub(super) value: Option<Value>,
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

    pub(super) fn is(&self, holder: &str) -> bool {
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

/// The lock queue's keys (`NAME/<lease>`) and `?scheme=txn`'s bare key `NAME` are disjoint,
/// so neither layout would see the other's holder: every grant of each checks, in its own
/// txn, that the other layout has no key, and a name found in use under the other layout
/// is refused (fail closed), naming both. `found_txn`: the other layout is the bare key.
pub(crate) fn two_schemes(name: &str, found_txn: bool) -> Error {
    let txn = format!("?scheme=txn (the bare key `{name}`)");
    let queue = format!("the lock queue (the default scheme, ?scheme=v3lock, etcd's Mutex: keys `{name}/<lease>`)");
    let (found, ours) = if found_txn { (txn, queue) } else { (queue, txn) };
    Error::backend(format!(
        "etcd: lock `{name}` is in use under {found}, and this client uses {ours}: one name takes one scheme"
    ))
}

/// Lease seconds for a length in milliseconds (etcd leases count whole seconds).
pub(crate) fn secs(ms: u64) -> i64 {
    i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX).max(1)
}

pub(crate) fn encode(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
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
