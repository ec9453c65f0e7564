//! How baton reaches each node: plain TCP, or TLS (rustls on the ring provider) for the
//! `rediss…` schemes — `rediss://`, `rediss+cluster://`, `rediss+sentinel://` — trusting
//! the system's roots or the PEM file of `?ca=`. One `Transport` serves every connection a
//! client opens (commands, subscriber, cluster nodes, sentinels, a master found after a
//! failover), so they all check certificates the same way.

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, TlsCertificates};

use crate::error::{Error, Result};

#[derive(Clone)]
pub(super) struct Transport {
    tls: bool,
    /// `?ca=`: the PEM roots to trust instead of the system's.
    ca: Option<Vec<u8>>,
}

impl Transport {
    /// `tls` from the scheme, `ca` from `?ca=` (read and checked by the config).
    pub(super) fn new(tls: bool, ca: Option<Vec<u8>>) -> Transport {
        if tls {
            // Once per process, unless the application installed a provider of its own.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        Transport { tls, ca }
    }

    /// The address of `host:port` over this transport (the roots are set per client).
    pub(super) fn addr(&self, host: String, port: u16) -> ConnectionAddr {
        if self.tls {
            ConnectionAddr::TcpTls { host, port, insecure: false, tls_params: None }
        } else {
            ConnectionAddr::Tcp(host, port)
        }
    }

    pub(super) fn info(&self, host: String, port: u16) -> redis::RedisResult<ConnectionInfo> {
        Ok(self.addr(host, port).into_connection_info()?.set_tcp_settings(tcp()))
    }

    /// The roots for the driver's TLS connections (`None` on plain TCP).
    pub(super) fn certs(&self) -> Option<TlsCertificates> {
        self.tls.then(|| TlsCertificates { client_tls: None, root_cert: self.ca.clone() })
    }

    /// A client for `info` over this transport. `store` (redacted) prefixes errors.
    pub(super) fn client(&self, info: ConnectionInfo, store: &str) -> Result<redis::Client> {
        match self.certs() {
            None => redis::Client::open(info)
                .map_err(|e| Error::invalid_argument(format!("{store}: bad connection settings: {e}")).with_source(e)),
            Some(certs) => redis::Client::build_with_tls(info, certs)
                .map_err(|e| Error::invalid_argument(format!("{store}: bad TLS settings: {e}")).with_source(e)),
        }
    }
}

/// Every connection's socket: Nagle off (the driver leaves it on; a script call is one
/// small write whose answer the caller waits for).
pub(super) fn tcp() -> redis::io::tcp::TcpSettings {
    redis::io::tcp::TcpSettings::default().set_nodelay(true)
}
