//! `redis+sentinel://s1,s2/master` (and `rediss+sentinel://`): the master the sentinels
//! name, followed across failovers. Two sets of credentials: the URL's `user:password@`
//! log in to the data nodes (the master), `?sentinel_user=` / `?sentinel_password=` to the
//! sentinels (`requirepass` or an ACL user on the sentinels); `StoreUrl` redacts
//! `sentinel_password` wherever the URL is shown. Over TLS both the sentinels and the
//! master are reached with the same `Transport` (the same roots).

use std::sync::Mutex;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionInfo, TlsMode};

use super::{Conn, Counted, Dial, Link, Topo, error, tls};
use crate::error::{Error, Result};
use crate::store::redis::config::RedisConfig;
use crate::sync::LockExt;

/// After a command fails as a failover makes it fail (connection lost, `READONLY` from a
/// demoted master, `LOADING`), the sentinels are asked for the master again and, when it
/// moved, both connections move to it.
pub(super) struct Sentinel {
    client: tokio::sync::Mutex<SentinelClient>,
    /// `host:port` of the master the connections go to.
    master: Mutex<String>,
}

/// The command connection to the master the sentinels name now; the subscriber goes there
/// too.
pub(super) async fn connect(
    dial: &Dial,
    cfg: &RedisConfig,
    sentinels: &[(String, u16)],
    master: &str,
    login: (Option<&str>, Option<&str>),
) -> Result<(Link, ConnectionInfo, Topo)> {
    let mut client = client(dial, cfg, sentinels, master, login).map_err(|e| error(&dial.store, e))?;
    let found = tokio::time::timeout(cfg.connect_timeout * 3, client.async_get_client())
        .await
        .map_err(|_| Error::connection(format!("cannot connect to {}: no sentinel answered in time", dial.store)))?
        .map_err(|e| dial.cannot(e))?;
    let info = found.get_connection_info().clone().set_redis_settings(dial.settings.clone());
    let at = info.addr().to_string();
    let c = ConnectionManager::new_with_config(found, dial.config.clone()).await.map_err(|e| dial.cannot(e))?;
    let s = Sentinel { client: tokio::sync::Mutex::new(client), master: Mutex::new(at) };
    Ok((Link::Single(c), info, Topo::Sentinel(Box::new(s))))
}

/// The client asking `sentinels` for the master `master` (database `cfg.db`).
fn client(
    dial: &Dial,
    cfg: &RedisConfig,
    sentinels: &[(String, u16)],
    master: &str,
    (user, password): (Option<&str>, Option<&str>),
) -> redis::RedisResult<SentinelClient> {
    let transport = &dial.transport;
    let sentinels = sentinels.iter().map(|(h, p)| transport.addr(h.clone(), *p));
    let mut b = SentinelClientBuilder::new(sentinels, master, SentinelServerType::Master)?
        .set_client_to_redis_db(cfg.db)
        .set_client_to_redis_tcp_settings(tls::tcp())
        .set_client_to_sentinel_tcp_settings(tls::tcp());
    if let Some(user) = &cfg.user {
        b = b.set_client_to_redis_username(user);
    }
    if let Some(password) = &cfg.password {
        b = b.set_client_to_redis_password(password);
    }
    if let Some(user) = user {
        b = b.set_client_to_sentinel_username(user);
    }
    if let Some(password) = password {
        b = b.set_client_to_sentinel_password(password);
    }
    if let Some(certs) = transport.certs() {
        b = b
            .set_client_to_redis_tls_mode(TlsMode::Secure)
            .set_client_to_sentinel_tls_mode(TlsMode::Secure)
            .set_client_to_redis_certificates(certs.clone())
            .set_client_to_sentinel_certificates(certs);
    }
    b.build()
}

impl Conn {
    /// On `redis+sentinel://`: moves both connections to the master the sentinels name
    /// now, if it moved. True when it did (or someone else just did).
    pub(super) async fn follow_master(&self) -> bool {
        let Topo::Sentinel(s) = &self.topo else { return false };
        let before = s.master.locked().clone();
        let mut client = s.client.lock().await;
        // Someone else moved the connections while we waited for the lock.
        if *s.master.locked() != before {
            return true;
        }
        let Ok(Ok(master)) = tokio::time::timeout(Duration::from_secs(5), client.async_get_client()).await else {
            return false;
        };
        let info = master.get_connection_info().clone().set_redis_settings(self.dial.settings.clone());
        let at = info.addr().to_string();
        if at == before {
            return false;
        }
        let connect = ConnectionManager::new_with_config(master, self.dial.config.clone());
        let Ok(Ok(conn)) = tokio::time::timeout(Duration::from_secs(5), connect).await else {
            return false;
        };
        let Ok(sub) = self.dial.subscriber(info) else { return false };
        {
            let mut slot = self.slot.locked();
            if slot.is_none() {
                return false; // closed meanwhile
            }
            *slot = Some(Counted { link: Link::Single(conn), trips: self.trips.clone() });
        }
        *s.master.locked() = at;
        self.hub.replace(sub);
        true
    }
}
