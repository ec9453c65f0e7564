//! The etcd store's bench hooks (feature `bench`): the lock waits' wake-up counters, and
//! yardsticks of one grant's txn and one delete.

use std::time::Duration;

use crate::rt::Instant;
use async_trait::async_trait;

use super::Etcd;
use super::keys;
use super::transport::{Compare, Txn, TxnOp};
use crate::error::Result;
use crate::store::Diagnostics;

#[async_trait]
impl Diagnostics for Etcd {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        vec![
            ("lock_waits_woken", self.local.wakes.load(Relaxed)),
            ("lock_wake_watch_events", self.local.wake_events.load(Relaxed)),
        ]
    }

    /// One txn as an uncontended grant writes it (create-if-absent under the session
    /// lease), then one delete, with the client's transport and session.
    async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, Duration)>> {
        let s = self.local.sessions.get(keys::secs(30_000)).await?;
        let key = format!("{name}/yardstick").into_bytes();
        let t0 = Instant::now();
        let txn = Txn {
            compare: vec![Compare::create(&key, 0)],
            success: vec![TxnOp::Put { key: key.clone(), value: Vec::new(), lease: Some(s.lease) }],
            failure: vec![],
        };
        self.t.txn(txn).await?;
        let txn_took = t0.elapsed();
        let t1 = Instant::now();
        let del = Txn { compare: vec![], success: vec![TxnOp::Delete { key }], failure: vec![] };
        self.t.txn(del).await?;
        Ok(vec![("txn", txn_took), ("delete", t1.elapsed())])
    }
}
