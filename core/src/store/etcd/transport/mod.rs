//! How the etcd algorithms reach etcd: one small trait (`proto`) with two implementations,
//! gRPC through `etcd-client` (`grpc`, feature `etcd`) and the JSON gateway over `reqwest`
//! (`http`, feature `etcd-http`), sharing one endpoint failover.

#[cfg(feature = "etcd-http")]
mod gateway;
mod proto;

#[cfg(feature = "etcd")]
mod grpc;
#[cfg(feature = "etcd-http")]
mod http;

use std::sync::Arc;

pub(crate) use self::proto::{Compare, Kv, Range, RangeResp, Transport, Txn, TxnOp, WatchStream};
pub(crate) use super::config::Tls;
use super::config::{EtcdConfig, Protocol};
use crate::error::{Error, Result};

/// Connects the transport `cfg` names and checks that an endpoint answers.
pub(crate) async fn connect(cfg: &EtcdConfig) -> Result<Arc<dyn Transport>> {
    let endpoints = cfg.endpoints.clone();
    let (store, timeout, connect_timeout, tls) = (cfg.store.clone(), cfg.timeout, cfg.connect_timeout, cfg.tls.clone());
    let auth = cfg.auth.as_ref().map(|c| (c.user.clone(), c.password.clone()));
    match cfg.transport {
        #[cfg(feature = "etcd-http")]
        Protocol::Http => {
            Ok(Arc::new(http::Http::connect(endpoints, store, timeout, connect_timeout, auth, tls).await?))
        }
        #[cfg(feature = "etcd")]
        Protocol::Grpc => {
            Ok(Arc::new(grpc::Grpc::connect(endpoints, store, timeout, connect_timeout, auth, tls).await?))
        }
        #[allow(unreachable_patterns)]
        _ => {
            let _ = (endpoints, store, timeout, connect_timeout, auth, tls);
            Err(Error::unsupported(format!("`{}://` is not available in this build of baton", cfg.url_scheme())))
        }
    }
}
