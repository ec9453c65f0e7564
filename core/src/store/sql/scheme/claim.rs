//! The per-name claim that makes the schemes and baton's own design (`scheme=state`)
//! exclude each other on one database: every grant of a `?scheme=` design also writes a
//! hold into the name's `baton_state` row (family `lock`), the row baton's own design
//! keeps each lock's state in, through that design's own step (one transaction holding
//! the row's lock: `SELECT … FOR UPDATE`, SQLite's `BEGIN IMMEDIATE`). The claim's holder
//! names the scheme (`?scheme=<scheme>:<table> <holder>`), its lease is the grant's.
//!
//! - baton's own design sees a claim as a live hold of another holder: busy until it is
//!   released or its lease ends, with no change to that design.
//! - A scheme's grant is its own statement first (its lock row, row lock, advisory lock,
//!   version), then the claim: a live hold there of anyone but the same scheme (baton's
//!   own design, another scheme, the same scheme on another table) makes the attempt busy,
//!   and the scheme's own hold is given back at once. Both steps take the same row lock,
//!   so of two grants under two designs at most one writes its hold: never two holders.
//! - Claims of the same scheme are the scheme's own business: its own statement already
//!   decided that the older holder is gone (an expired row, a closed session), so the
//!   older claim is replaced.
//! - Tokens: the claim's token is above the row's last token (`fence`) and at least the
//!   scheme's own token (which is at least the database's clock in µs, as the default
//!   design's tokens are), so tokens of one name rise across every design.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::key::{Family, Key};
use crate::state::{Hold, HoldMode, KeyState};
use crate::store::stateful::{Op, StateStore};
use crate::url::StoreUrl;

/// The holder id of a claim: the scheme's identity, then the holder's own id.
pub(crate) fn holder(ident: &str, holder: &str) -> String {
    format!("{}{holder}", prefix(ident))
}

/// What every claim of the scheme `ident` starts with.
fn prefix(ident: &str) -> String {
    format!("?scheme={ident} ")
}

/// The answer to a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// Claimed, with the grant's token.
    Granted(u64),
    /// Held under another design until about `retry_ms` from now.
    Busy { retry_ms: Option<u64> },
}

/// Drops expired holds and queue places (as the default design's steps do).
fn purge(s: &mut KeyState, now_ms: u64) {
    s.holds.retain(|h| h.expires_ms > now_ms);
    s.queue.retain(|w| w.expires_ms > now_ms);
}

/// The claim step on the name's state: see the module's comment.
pub(crate) fn take(s: &mut KeyState, now_us: u64, ident: &str, me: &str, lease_ms: u64, own_token: u64) -> Claimed {
    let now = now_us / 1000;
    purge(s, now);
    let ours = prefix(ident);
    let other = s.holds.iter().filter(|h| !h.holder.starts_with(&ours)).map(|h| h.expires_ms).min();
    if let Some(until) = other {
        return Claimed::Busy { retry_ms: Some(until.saturating_sub(now)) };
    }
    s.holds.retain(|h| !h.holder.starts_with(&ours));
    let token = s.fence.saturating_add(1).max(own_token);
    s.fence = token;
    s.holds.push(Hold {
        holder: me.to_owned(),
        mode: HoldMode::Exclusive,
        count: 1,
        token,
        expires_ms: now.saturating_add(lease_ms),
        value: None,
    });
    Claimed::Granted(token)
}

/// Extends the claim `me` to `lease_ms` from now; false when it is gone.
pub(crate) fn renew(s: &mut KeyState, now_us: u64, me: &str, lease_ms: u64) -> bool {
    let now = now_us / 1000;
    purge(s, now);
    match s.holds.iter_mut().find(|h| h.holder == me) {
        Some(h) => {
            h.expires_ms = now.saturating_add(lease_ms);
            true
        }
        None => false,
    }
}

/// Removes the claim `me`.
pub(crate) fn release(s: &mut KeyState, now_us: u64, me: &str) {
    purge(s, now_us / 1000);
    s.holds.retain(|h| h.holder != me);
}

/// baton's own design on the scheme's database, where the claims are kept.
#[derive(Debug)]
pub(crate) enum Claims {
    #[cfg(feature = "postgres")]
    Pg(super::super::postgres::Postgres),
    #[cfg(feature = "mysql")]
    My(super::super::mysql::Mysql),
    #[cfg(feature = "sqlite")]
    Lite(super::super::sqlite::Sqlite),
}

/// Whether baton's own design on a `scheme://` database reads the option `k` too.
fn keeps(scheme: &str, k: &str, tls: &[&str]) -> bool {
    match scheme {
        "sqlite" => k == "busy_timeout",
        _ => k == "create" || tls.contains(&k),
    }
}

/// The key of a plain lock's state row.
fn key(name: &str) -> Key {
    Key { family: Family::Lock, name: name.to_owned() }
}

impl Claims {
    /// Opens baton's own design on the database `url` names (its TLS options, SQLite's
    /// `busy_timeout`, and on a server `create`: with `create=false` its table must exist;
    /// the scheme's other options are not the design's).
    pub(crate) async fn open(url: &StoreUrl) -> Result<Claims> {
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        let tls = super::super::tls::options(url.scheme());
        #[cfg(not(any(feature = "postgres", feature = "mysql")))]
        let tls: Vec<&str> = Vec::new();
        let keep: Vec<(String, String)> =
            url.options().iter().filter(|(k, _)| keeps(url.scheme(), k, &tls)).cloned().collect();
        let own = url.with_host(url.scheme(), url.hosts(), &keep)?;
        match url.scheme() {
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => Ok(Claims::Pg(super::super::postgres::Postgres::open(&own).await?)),
            #[cfg(feature = "mysql")]
            "mysql" => Ok(Claims::My(super::super::mysql::Mysql::open(&own).await?)),
            #[cfg(feature = "sqlite")]
            "sqlite" => Ok(Claims::Lite(super::super::sqlite::Sqlite::open(&own).await?)),
            s => Err(Error::invalid_url(format!("`{s}://` names no SQL database of this build"))),
        }
    }

    async fn update<R: Send + 'static>(&self, name: &str, f: Op<R>) -> Result<R> {
        let k = key(name);
        match self {
            #[cfg(feature = "postgres")]
            Claims::Pg(s) => s.update(&k, f).await,
            #[cfg(feature = "mysql")]
            Claims::My(s) => s.update(&k, f).await,
            #[cfg(feature = "sqlite")]
            Claims::Lite(s) => s.update(&k, f).await,
        }
    }

    /// The name's state (claims and the default design's holds) and the store's clock (µs).
    pub(crate) async fn read(&self, name: &str) -> Result<(KeyState, u64)> {
        let k = key(name);
        match self {
            #[cfg(feature = "postgres")]
            Claims::Pg(s) => s.read(&k).await,
            #[cfg(feature = "mysql")]
            Claims::My(s) => s.read(&k).await,
            #[cfg(feature = "sqlite")]
            Claims::Lite(s) => s.read(&k).await,
        }
    }

    pub(crate) async fn take(
        &self,
        name: &str,
        ident: &str,
        holder_id: &str,
        lease_ms: u64,
        own_token: u64,
    ) -> Result<Claimed> {
        let (ident, me) = (ident.to_owned(), holder(ident, holder_id));
        self.update(name, Box::new(move |s, now| take(s, now, &ident, &me, lease_ms, own_token))).await
    }

    pub(crate) async fn renew(&self, name: &str, ident: &str, holder_id: &str, lease: Duration) -> Result<bool> {
        let me = holder(ident, holder_id);
        let ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
        self.update(name, Box::new(move |s, now| renew(s, now, &me, ms))).await
    }

    pub(crate) async fn release(&self, name: &str, ident: &str, holder_id: &str) -> Result<()> {
        let me = holder(ident, holder_id);
        self.update(name, Box::new(move |s, now| release(s, now, &me))).await
    }

    pub(crate) async fn close(&self) {
        match self {
            #[cfg(feature = "postgres")]
            Claims::Pg(s) => s.close().await,
            #[cfg(feature = "mysql")]
            Claims::My(s) => s.close().await,
            #[cfg(feature = "sqlite")]
            Claims::Lite(s) => s.close().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(holder: &str, expires_ms: u64) -> Hold {
        Hold { holder: holder.into(), mode: HoldMode::Exclusive, count: 1, token: 5, expires_ms, value: None }
    }

    /// A live hold of the default design or another scheme makes a claim busy; an expired
    /// one does not; a claim of the same scheme is replaced; the token rises above both
    /// the row's last token and the scheme's own.
    #[test]
    fn claims_exclude_other_designs() {
        let now_us = 10_000_000;
        let mut s = KeyState { fence: 7, holds: vec![hold("default-owner", 20_000)], ..KeyState::default() };
        let me = holder("table:baton_lock", "a");
        assert_eq!(take(&mut s, now_us, "table:baton_lock", &me, 1000, 3), Claimed::Busy { retry_ms: Some(10_000) });
        let mut s = KeyState { fence: 7, holds: vec![hold(&holder("advisory", "b"), 20_000)], ..KeyState::default() };
        assert!(matches!(take(&mut s, now_us, "table:baton_lock", &me, 1000, 3), Claimed::Busy { .. }));
        let mut s =
            KeyState { fence: 7, holds: vec![hold(&holder("table:other", "b"), 20_000)], ..KeyState::default() };
        assert!(matches!(take(&mut s, now_us, "table:baton_lock", &me, 1000, 3), Claimed::Busy { .. }));
        let mut s = KeyState { fence: 7, holds: vec![hold("default-owner", 9_000)], ..KeyState::default() };
        assert_eq!(take(&mut s, now_us, "table:baton_lock", &me, 1000, 3), Claimed::Granted(8));
        let old = holder("table:baton_lock", "old");
        let mut s = KeyState { fence: 7, holds: vec![hold(&old, 20_000)], ..KeyState::default() };
        assert_eq!(take(&mut s, now_us, "table:baton_lock", &me, 1000, 30), Claimed::Granted(30));
        assert_eq!((s.holds.len(), s.holds[0].holder.as_str(), s.fence), (1, me.as_str(), 30));
        assert!(renew(&mut s, now_us, &me, 5000));
        assert_eq!(s.holds[0].expires_ms, 15_000);
        release(&mut s, now_us, &me);
        assert!(s.holds.is_empty() && !renew(&mut s, now_us, &me, 5000));
    }
}
