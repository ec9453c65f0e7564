//! `Client::fence` on Redis: the protected resource `KEY` is a hash `{value, fence}`
//! written by one script that refuses a token below `fence` (other clients read it with
//! `HGET KEY value`). One key, so it works on a cluster as on one server.

use async_trait::async_trait;
use redis::Value;

use super::super::Redis;
use super::Lua;
use crate::error::Result;
use crate::store::FenceOps;

/// KEYS: the resource. ARGV: token, value.
pub(crate) static WRITE: Lua = lua!("guarded_write");

#[async_trait]
impl FenceOps for Redis {
    async fn write(&self, key: &str, value: &str, token: u64) -> Result<bool> {
        let token = token.to_string();
        let v = self.conn.eval(&WRITE, &[key.as_bytes()], &[token.as_bytes(), value.as_bytes()]).await?;
        Ok(matches!(v, Value::Int(1)))
    }

    async fn read(&self, key: &str) -> Result<Option<(String, u64)>> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(key).arg("value").arg("fence");
        let (value, fence): (Option<String>, Option<u64>) = self.conn.query(&cmd).await?;
        Ok(value.map(|v| (v, fence.unwrap_or(0))))
    }
}
