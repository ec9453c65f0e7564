//! `redis+cluster://h1,h2,…` (and `rediss+cluster://`): the cluster client routes each
//! script by its first key (every key of one primitive shares its slot). The subscriber
//! connection goes to one node (a PUBLISH reaches every node's subscribers) and moves to
//! another when that one stops answering.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use redis::cluster::ClusterClientBuilder;
use redis::{Cmd, ConnectionInfo, RedisConnectionInfo, TlsMode};

use super::tls::{self, Transport};
use super::{Conn, Dial, Link, Topo, error};
use crate::error::{Error, Result};
use crate::store::redis::config::RedisConfig;
use crate::store::redis::keys;
use crate::sync::LockExt;

/// The cluster's nodes, and the node the subscriber connection goes to.
pub(super) struct Rehome {
    nodes: Vec<(String, u16)>,
    /// `host:port` of the node the subscriber connection goes to.
    current: Mutex<String>,
    /// One move at a time.
    moving: tokio::sync::Mutex<()>,
}

/// The cluster connection, and the first node of the URL that answers now for the
/// subscriber connection.
pub(super) async fn connect(
    dial: &Dial,
    cfg: &RedisConfig,
    nodes: &[(String, u16)],
) -> Result<(Link, ConnectionInfo, Topo)> {
    let infos = nodes.iter().map(|(h, p)| dial.transport.info(h.clone(), *p));
    let infos = infos.collect::<redis::RedisResult<Vec<_>>>().map_err(|e| error(&dial.store, e))?;
    let first = infos[0].clone();
    let mut b = ClusterClientBuilder::new(infos)
        .connection_timeout(cfg.connect_timeout)
        .response_timeout(cfg.timeout)
        .retries(3)
        .max_retry_wait(1000)
        .min_retry_wait(50)
        .tcp_settings(tls::tcp());
    if let Some(user) = &cfg.user {
        b = b.username(user.clone());
    }
    if let Some(password) = &cfg.password {
        b = b.password(password.clone());
    }
    if let Some(certs) = dial.transport.certs() {
        b = b.tls(TlsMode::Secure).certs(certs);
    }
    let client = b.build().map_err(|e| error(&dial.store, e))?;
    // Bounded: the cluster client's own connect may retry past `connect_timeout`.
    let c = tokio::time::timeout(cfg.connect_timeout * 3, client.get_async_connection())
        .await
        .map_err(|_| Error::connection(format!("cannot connect to {}: timed out", dial.store)))?
        .map_err(|e| dial.cannot(e))?;
    let sub =
        first_answering(nodes, &dial.settings, dial.connect_timeout, None, &dial.transport).await.unwrap_or(first);
    let rehome = Rehome {
        nodes: nodes.to_vec(),
        current: Mutex::new(sub.addr().to_string()),
        moving: tokio::sync::Mutex::new(()),
    };
    Ok((Link::Cluster(c), sub, Topo::Cluster(rehome)))
}

/// The first of `nodes` (but `except`) that answers PING within `limit`, if any.
async fn first_answering(
    nodes: &[(String, u16)],
    settings: &RedisConnectionInfo,
    limit: Duration,
    except: Option<&str>,
    transport: &Transport,
) -> Option<ConnectionInfo> {
    for (host, port) in nodes {
        let Ok(info) = transport.info(host.clone(), *port) else { continue };
        if except.is_some_and(|x| x == info.addr().to_string()) {
            continue;
        }
        let info = info.set_redis_settings(settings.clone());
        let Ok(client) = transport.client(info.clone(), "") else { continue };
        let ping = async {
            let mut c = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING").query_async::<String>(&mut c).await
        };
        if let Ok(Ok(_)) = tokio::time::timeout(limit, ping).await {
            return Some(info);
        }
    }
    None
}

impl Conn {
    /// Renewals (each with the Redis name it renews) as one pipeline; on a cluster, one
    /// pipeline per hash slot (a pipeline cannot span slots), all sent at once.
    pub(crate) async fn renew_many(&self, items: Vec<(String, Cmd)>) -> Result<Vec<bool>> {
        if !matches!(self.topo, Topo::Cluster(_)) {
            return self.renew_pipeline(items.into_iter().map(|(_, c)| c).collect()).await;
        }
        let mut by_slot: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
        for (i, (name, _)) in items.iter().enumerate() {
            by_slot.entry(keys::slot(name.as_bytes())).or_default().push(i);
        }
        let groups: Vec<Vec<usize>> = by_slot.into_values().collect();
        let runs = groups.iter().map(|g| self.renew_pipeline(g.iter().map(|i| items[*i].1.clone()).collect()));
        let answers = futures_util::future::join_all(runs).await;
        let mut out = vec![false; items.len()];
        for (g, answer) in groups.iter().zip(answers) {
            for (i, ok) in g.iter().zip(answer?) {
                out[*i] = ok;
            }
        }
        Ok(out)
    }

    /// On `redis+cluster://`: moves the subscriber connection to the first other node of
    /// the URL that answers. True when it moved (or someone else just did).
    pub(super) async fn rehome(&self) -> bool {
        let Topo::Cluster(r) = &self.topo else { return false };
        let before = r.current.locked().clone();
        let _moving = r.moving.lock().await;
        if *r.current.locked() != before {
            return true;
        }
        let d = &self.dial;
        let Some(info) = first_answering(&r.nodes, &d.settings, d.connect_timeout, Some(&before), &d.transport).await
        else {
            return false;
        };
        let at = info.addr().to_string();
        let Ok(sub) = d.subscriber(info) else { return false };
        *r.current.locked() = at;
        self.hub.replace(sub);
        true
    }
}
