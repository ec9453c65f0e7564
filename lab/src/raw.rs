//! What the hand-written schemes share: one connection of their own (each lab client is
//! a separate Redis client) and the error mapping.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisError};

use baton::StoreUrl;
use baton::{Error, ErrorKind, Result};

/// One client's connection and the key of its lock.
pub(crate) struct Raw {
    pub(crate) con: MultiplexedConnection,
    pub(crate) key: String,
    /// The URL without its password, for messages.
    shown: String,
}

impl Raw {
    /// Connects to `url` (bounded: a dead server fails in seconds, not minutes).
    pub(crate) async fn open(url: &str, key: &str) -> Result<Raw> {
        let shown = StoreUrl::parse(url).map_or_else(|_| "(an unparsable URL)".to_owned(), |u| u.to_string());
        let client =
            redis::Client::open(url).map_err(|e| Error::new(ErrorKind::InvalidUrl, format!("lab: {shown}: {e}")))?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)));
        let con = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| Error::new(ErrorKind::Connection, format!("lab: {shown}: {e}")).with_source(e))?;
        Ok(Raw { con, key: key.to_owned(), shown })
    }

    /// Maps a Redis error of this connection.
    pub(crate) fn err(&self, e: RedisError) -> Error {
        let msg = format!("lab: {}: {e}", self.shown);
        if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
            Error::new(ErrorKind::Connection, msg).with_source(e)
        } else {
            Error::new(ErrorKind::Backend, msg).with_source(e)
        }
    }

    /// Runs one command.
    pub(crate) async fn query<T: redis::FromRedisValue>(&mut self, cmd: &redis::Cmd) -> Result<T> {
        match cmd.query_async(&mut self.con).await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.err(e)),
        }
    }

    /// The command `name` with the lock's key as its first argument.
    pub(crate) fn cmd(&self, name: &str) -> redis::Cmd {
        let mut c = redis::cmd(name);
        c.arg(&self.key);
        c
    }

    /// `DEL key`: whoever holds it (the release of the shared-value schemes).
    pub(crate) async fn del(&mut self) -> Result<bool> {
        let n: i64 = self.query(&self.cmd("DEL")).await?;
        Ok(n == 1)
    }

    /// `SET key value NX PX ttl` (one atomic command).
    pub(crate) async fn set_nx_px(&mut self, value: &str, ttl: Duration) -> Result<bool> {
        let mut c = self.cmd("SET");
        c.arg(value).arg("NX").arg("PX").arg(ms(ttl));
        let ok: Option<String> = self.query(&c).await?;
        Ok(ok.is_some())
    }

    /// `SETNX key value`.
    pub(crate) async fn setnx(&mut self, value: &str) -> Result<bool> {
        let mut c = self.cmd("SETNX");
        c.arg(value);
        let n: i64 = self.query(&c).await?;
        Ok(n == 1)
    }
}

/// Whole milliseconds, at least 1 (Redis refuses a zero expiry).
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}
