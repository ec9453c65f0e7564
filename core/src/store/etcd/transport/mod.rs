//! How the etcd algorithms reach etcd: one small trait (`proto`) with two implementations,
//! gRPC through `etcd-client` (`grpc`, feature `etcd`; on plain HTTP over a channel of its
//! own, `h2`) and the JSON gateway over `reqwest`
//! (`http`, feature `etcd-http`), sharing one endpoint failover.

#[cfg(feature = "etcd-http")]
mod gateway;
mod proto;

#[cfg(feature = "etcd")]
mod grpc;
#[cfg(feature = "etcd")]
mod h2;
#[cfg(feature = "etcd-http")]
mod http;

use std::sync::Arc;

pub(crate) use self::proto::{Compare, Kv, Range, RangeResp, Transport, Txn, TxnOp, TxnResp, WatchStream};
use super::config::{EtcdConfig, Protocol};
use crate::error::{Error, Result};

/// Connects the transport `cfg` names and checks that an endpoint answers.
pub(crate) async fn connect(cfg: &EtcdConfig) -> Result<Arc<dyn Transport>> {
    match cfg.transport {
        #[cfg(feature = "etcd-http")]
        Protocol::Http => Ok(Arc::new(http::Http::connect(cfg).await?)),
        #[cfg(feature = "etcd")]
        Protocol::Grpc => Ok(Arc::new(grpc::Grpc::connect(cfg).await?)),
        #[allow(unreachable_patterns)]
        _ => Err(Error::unsupported(format!("`{}://` is not available in this build of baton", cfg.url_scheme()))),
    }
}

/// Whether etcd refused the credentials (gRPC 16 Unauthenticated, or 3 with etcd's
/// "authentication failed", or "user name is empty": none given where auth is on): a
/// `Connection` error, as a refused password is on every store, so `baton run` exits with
/// one code for it whatever the store.
pub(crate) fn auth_refused(code: i32, message: &str) -> bool {
    code == 16
        || message.contains("authentication failed")
        || message.contains("invalid auth token")
        || message.contains("user name is empty")
}

/// Whether a watch's cancel reason may be its token's (etcd checks a watch's token when
/// it creates the watch and answers a created and cancelled watch): an expired one (named,
/// or "permission denied" from older etcd releases), or none.
pub(crate) fn token_refused(why: &str) -> bool {
    why.contains("auth token") || why.contains("permission denied") || why.contains("user name is empty")
}
