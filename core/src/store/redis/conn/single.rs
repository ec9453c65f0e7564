//! `redis://host:port` (and `rediss://`): one server, one multiplexed connection that
//! reconnects by itself.

use redis::ConnectionInfo;
use redis::aio::ConnectionManager;

use super::{Dial, Link, Topo, error};
use crate::error::Result;

/// The command connection to `host:port`, and where the subscriber connection goes (the
/// same server).
pub(super) async fn connect(dial: &Dial, host: &str, port: u16, lazy: bool) -> Result<(Link, ConnectionInfo, Topo)> {
    let info = dial.transport.info(host.to_owned(), port).map_err(|e| error(&dial.store, e))?;
    let client = dial.client(info.clone().set_redis_settings(dial.settings.clone()))?;
    let c = if lazy {
        ConnectionManager::new_lazy_with_config(client, dial.config.clone()).map_err(|e| dial.cannot(e))?
    } else {
        ConnectionManager::new_with_config(client, dial.config.clone()).await.map_err(|e| dial.cannot(e))?
    };
    Ok((Link::Single(c), info, Topo::Single))
}
