//! `setnx`: the seeds' first lock (seed 001 青铜方案; seed 000 §1.SetNX命令实现分布式锁).

use std::time::Duration;

use async_trait::async_trait;

use crate::LabLock;
use crate::raw::Raw;
use baton::FencingToken;
use baton::Result;

/// The value seed 001's code stores for every client alike.
pub(crate) const SHARED_VALUE: &str = "123";

/// `SETNX key 123` to take the lock, `DEL key` to give it back.
///
/// **Guarantees:** while every holder lives and releases once, one holder at a time
/// (`SETNX` is atomic).
///
/// **Breaks:** the key never expires, so a holder that dies holding it (an exception
/// before the `DEL`, a crashed server) blocks everyone for ever (seed 001 青铜方案: 业务代码
/// 出现异常或者服务器宕机,没有执行删除锁的逻辑,就造成了死锁). The release is a bare `DEL`
/// that checks no owner: a late retry of a release deletes whoever holds the lock now. No
/// fencing token, one node.
pub struct Setnx {
    raw: Raw,
}

impl Setnx {
    pub(crate) async fn open(url: &str, key: &str) -> Result<Setnx> {
        Ok(Setnx { raw: Raw::open(url, key).await? })
    }
}

#[async_trait]
impl LabLock for Setnx {
    async fn acquire(&mut self, _ttl: Duration) -> Result<bool> {
        self.raw.setnx(SHARED_VALUE).await
    }

    async fn release(&mut self) -> Result<bool> {
        self.raw.del().await
    }

    fn token(&self) -> Option<FencingToken> {
        None
    }
}
