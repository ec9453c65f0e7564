//! The client of `redis+sentinel://` and `rediss+sentinel://` that asks the sentinels for
//! the master. Two sets of credentials: the URL's `user:password@` log in to the data
//! nodes (the master), `?sentinel_user=` / `?sentinel_password=` to the sentinels
//! (`requirepass` or an ACL user on the sentinels); `StoreUrl` redacts
//! `sentinel_password` wherever the URL is shown. Over TLS both the sentinels and the
//! master are reached with the URL's `Transport` (the same roots).

use redis::TlsMode;
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};

use super::tls::Transport;
use crate::error::{Error, Result};
use crate::url::StoreUrl;

/// Options of the sentinel schemes only.
pub(super) const OPTIONS: &[&str] = &["sentinel_user", "sentinel_password"];

/// Refuses the sentinel options on the other schemes.
pub(super) fn check_options(url: &StoreUrl, sentinel: bool) -> Result<()> {
    match OPTIONS.iter().find(|o| url.option(o).is_some()) {
        Some(o) if !sentinel => Err(Error::invalid_argument(format!(
            "option `{o}` of {url} applies to Redis Sentinel only: use redis+sentinel:// or rediss+sentinel://"
        ))),
        _ => Ok(()),
    }
}

/// The client asking `sentinels` (the URL's hosts) for the master `master` (database `db`).
pub(super) fn client(
    url: &StoreUrl,
    sentinels: Vec<(String, u16)>,
    master: &str,
    db: i64,
    transport: &Transport,
) -> redis::RedisResult<SentinelClient> {
    let sentinels = sentinels.into_iter().map(|(h, p)| transport.addr(h, p));
    let mut b = SentinelClientBuilder::new(sentinels, master, SentinelServerType::Master)?
        .set_client_to_redis_db(db)
        .set_client_to_redis_tcp_settings(super::tls::tcp())
        .set_client_to_sentinel_tcp_settings(super::tls::tcp());
    if let Some(user) = url.user().filter(|u| !u.is_empty()) {
        b = b.set_client_to_redis_username(user);
    }
    if let Some(password) = url.password() {
        b = b.set_client_to_redis_password(password);
    }
    if let Some(user) = url.option("sentinel_user").filter(|u| !u.is_empty()) {
        b = b.set_client_to_sentinel_username(user);
    }
    if let Some(password) = url.option("sentinel_password") {
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
