//! `Client::fence` on etcd: the value at `KEY`, the token of its last write at
//! `KEY` + NUL + `fence` (a key no user key reaches: keys carry no NUL byte). A write
//! reads the fence, refuses a token below it, and writes both keys in a txn guarded on the
//! fence key's mod revision, so a fence raised in between makes it read again.

use async_trait::async_trait;

use super::Etcd;
use super::keyed::{RACES, raced};
use super::transport::{Compare, Range, Txn, TxnOp};
use crate::error::Result;
use crate::store::FenceOps;

fn fence_key(key: &str) -> Vec<u8> {
    let mut k = key.as_bytes().to_vec();
    k.extend_from_slice(b"\0fence");
    k
}

#[async_trait]
impl FenceOps for Etcd {
    async fn write(&self, key: &str, value: &str, token: u64) -> Result<bool> {
        let fence = fence_key(key);
        for _ in 0..RACES {
            let r = self.t.range(Range::key(&fence)).await?;
            let (seen, rev) = match r.kvs.first() {
                Some(kv) => (String::from_utf8_lossy(&kv.value).parse::<u64>().unwrap_or(0), kv.mod_revision),
                None => (0, 0),
            };
            if seen > token {
                return Ok(false);
            }
            let txn = Txn {
                compare: vec![Compare::modified(&fence, rev)],
                success: vec![
                    TxnOp::Put { key: key.as_bytes().to_vec(), value: value.as_bytes().to_vec(), lease: Some(0) },
                    TxnOp::Put { key: fence.clone(), value: token.to_string().into_bytes(), lease: Some(0) },
                ],
                failure: vec![],
            };
            if self.t.txn(txn).await?.succeeded {
                return Ok(true);
            }
        }
        Err(raced())
    }

    async fn read(&self, key: &str) -> Result<Option<(String, u64)>> {
        let value = self.t.range(Range::key(key.as_bytes())).await?;
        let Some(kv) = value.kvs.first() else { return Ok(None) };
        let fence = self.t.range(Range::key(&fence_key(key))).await?;
        let token = fence.kvs.first().map_or(0, |f| String::from_utf8_lossy(&f.value).parse().unwrap_or(0));
        Ok(Some((String::from_utf8_lossy(&kv.value).into_owned(), token)))
    }
}
