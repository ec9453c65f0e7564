//! The scheme table: which store a URL's scheme opens, and which cargo feature brings it.

use std::sync::Arc;

use super::Store;
#[cfg(any(feature = "etcd", feature = "etcd-http"))]
use super::etcd;
use super::memory;
#[cfg(feature = "redis")]
use super::redis;
#[cfg(feature = "redlock")]
use super::redlock;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
use super::sql;
#[cfg(feature = "zookeeper")]
use super::zk;
use crate::error::{Error, Result};
use crate::url::StoreUrl;

/// Every scheme baton knows, with the cargo feature that brings it.
/// `None`: a scheme baton reserves for a store it does not have yet.
const KNOWN_SCHEMES: &[(&str, Option<&str>)] = &[
    ("redis", Some("redis")),
    ("rediss", Some("redis")),
    ("redis+cluster", Some("redis")),
    ("redis+sentinel", Some("redis")),
    ("rediss+cluster", Some("redis")),
    ("rediss+sentinel", Some("redis")),
    ("redlock", Some("redlock")),
    ("etcd", Some("etcd")),
    ("etcds", Some("etcd")),
    ("etcd+http", Some("etcd-http")),
    ("etcd+https", Some("etcd-http")),
    ("postgres", Some("postgres")),
    ("postgresql", Some("postgres")),
    ("mysql", Some("mysql")),
    ("sqlite", Some("sqlite")),
    ("zk", Some("zookeeper")),
    ("zks", Some("zookeeper")),
];

/// Opens the store `url` names.
pub(crate) async fn open(url: &StoreUrl) -> Result<Arc<dyn Store>> {
    // `?scheme=` other than `state` on a SQL URL: one of the classic SQL lock schemes.
    #[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
    if matches!(url.scheme(), "sqlite" | "postgres" | "postgresql" | "mysql")
        && let Some(store) = sql::scheme::SchemeStore::open(url).await?
    {
        return Ok(Arc::new(store));
    }
    match url.scheme() {
        "memory" => Ok(Arc::new(memory::Memory::open(url)?)),
        #[cfg(feature = "sqlite")]
        "sqlite" => Ok(Arc::new(sql::sqlite::Sqlite::open(url).await?)),
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => Ok(Arc::new(sql::postgres::Postgres::open(url).await?)),
        #[cfg(feature = "mysql")]
        "mysql" => Ok(Arc::new(sql::mysql::Mysql::open(url).await?)),
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+cluster" | "rediss+cluster" | "redis+sentinel" | "rediss+sentinel" => {
            Ok(Arc::new(redis::Redis::open(url).await?))
        }
        #[cfg(feature = "redlock")]
        "redlock" => Ok(Arc::new(redlock::Redlock::open(url).await?)),
        #[cfg(feature = "etcd")]
        "etcd" | "etcds" => Ok(Arc::new(etcd::Etcd::open(url).await?)),
        #[cfg(feature = "etcd-http")]
        "etcd+http" | "etcd+https" => Ok(Arc::new(etcd::Etcd::open(url).await?)),
        #[cfg(feature = "zookeeper")]
        "zk" | "zks" => Ok(Arc::new(zk::Zk::open(url).await?)),
        s => match KNOWN_SCHEMES.iter().find(|(k, _)| *k == s) {
            Some((_, Some(feature))) => Err(Error::unsupported(format!(
                "`{s}://` is not available in this build of baton (it needs the `{feature}` feature)"
            ))),
            Some((_, None)) => Err(Error::unsupported(format!(
                "`{s}://` is not available in this version of baton (no such store yet)"
            ))),
            None => Err(Error::invalid_url(format!(
                "unknown scheme `{s}` in {url}; known: memory, {}",
                KNOWN_SCHEMES.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
            ))),
        },
    }
}
