//! The classic SQL lock schemes, chosen by `?scheme=` on `postgres://`, `mysql://` and
//! `sqlite://` (docs/sql-schemes.md gives each one's statements):
//!
//! | scheme       | PostgreSQL | MySQL/MariaDB | SQLite | lease                      | token               |
//! |--------------|------------|---------------|--------|----------------------------|---------------------|
//! | `table`      | yes        | yes           | yes    | expiry column, DB clock    | counter table       |
//! | `for-update` | yes        | yes           | no     | session idle timeout       | counter table       |
//! | `optimistic` | yes        | yes           | yes    | expiry column, DB clock    | the version column  |
//! | `advisory`   | yes        | yes           | no     | session idle timeout       | counter table       |
//!
//! Every scheme has plain locks (`Lock`) only; fair locks, read-write locks, semaphores and
//! latches are `Unsupported` under a scheme and live in the default design (no `scheme`).
//! Each scheme is a [`LockScheme`]; this module routes the `Store` calls to it, and
//! pairs every grant with a claim in baton's own design (`claim`): a name held under one
//! design is busy under every other on the same database.

// The driver face (`db`) covers the three databases; a build with fewer leaves parts unused.
#![cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(dead_code, unused_variables, unused_mut)
)]

#[cfg(any(feature = "postgres", feature = "mysql"))]
mod advisory;
mod claim;
pub(crate) mod config;
mod db;
mod fence;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod for_update;
mod optimistic;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod pinned;
mod table;
mod wait;
#[cfg(all(unix, any(feature = "postgres", feature = "mysql")))]
mod watch;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use self::config::{Scheme, SchemeConfig};
use self::db::{Dialect, Pool};
use crate::error::{Error, Result};
use crate::inspect::Inspection;
use crate::key::{Family, Key};
use crate::state::{Attempt, KeyState, Mode, Released, Request};
use crate::store::sql::config::SqlConfig;
use crate::store::{Store, Subscription};
use crate::url::StoreUrl;

/// One lock scheme's steps on a name (the store's prefix already in it).
#[async_trait]
pub(crate) trait LockScheme: Send + Sync + 'static {
    async fn acquire(&self, name: &str, req: &Request) -> Result<Attempt>;
    async fn renew(&self, name: &str, holder: &str, lease_ms: u64) -> Result<bool>;
    async fn release(&self, name: &str, holder: &str, count: u32) -> Result<Released>;
    /// The hold (at most one) and last token, and the time `lease_left` is measured from.
    async fn read(&self, name: &str) -> Result<(KeyState, u64)>;
    /// A number that changes whenever the lock may have been freed (waiters poll it).
    async fn version(&self, name: &str) -> Result<i64>;
    /// Records `token` as the token of `holder`'s fresh grant of `name` and as the name's
    /// last token: the claim handed out a higher one than the scheme's own (`claim::take`).
    async fn adopt(&self, name: &str, holder: &str, token: u64) -> Result<()>;
    /// `Store::loss_watch` of `holder`'s fresh grant of `name`.
    fn loss_watch(&self, name: &str, holder: &str) -> Option<crate::store::LossWatch> {
        let _ = (name, holder);
        None
    }
    async fn close(&self);
    /// The statements one uncontended acquire + release of `name` sends, each timed raw
    /// on the scheme's own connections (feature `bench`; `Client::yardsticks`).
    #[cfg(feature = "bench")]
    async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, Duration)>> {
        let _ = name;
        Ok(Vec::new())
    }
}

/// A store speaking one lock scheme.
pub(crate) struct SchemeStore {
    scheme: Scheme,
    imp: Arc<dyn LockScheme>,
    /// What names the store's locks in this process (its waiters' wake-ups).
    id: String,
    /// baton's own design on the same database, where every grant is claimed
    /// (`?exclusive=true`).
    claims: Option<claim::Claims>,
    /// What names this scheme in its claims: the scheme and its table (`advisory`: the
    /// scheme alone, its locks are the server's).
    ident: String,
}

impl std::fmt::Debug for SchemeStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemeStore").field("scheme", &self.scheme).finish_non_exhaustive()
    }
}

/// The store's connections: `pool` for one-statement steps, and for the session schemes
/// `pinned`, whose connections are each pinned to one held lock.
pub(crate) struct Conns {
    pub(crate) pool: Pool,
    pub(crate) store: String,
}

impl SchemeStore {
    /// Opens the scheme `url` asks for; `None` when it asks for baton's own design.
    pub(crate) async fn open(url: &StoreUrl) -> Result<Option<SchemeStore>> {
        let Some(scheme) = config::requested(url)? else { return Ok(None) };
        let cfg = SchemeConfig::from_url(url, scheme)?;
        let store = format!("{url} (scheme {})", scheme.as_str());
        let conns = Conns { pool: connect(&cfg, 8, &store).await?, store: store.clone() };
        let imp: Arc<dyn LockScheme> = match scheme {
            Scheme::Table => Arc::new(table::Table::open(conns, &cfg).await?),
            Scheme::Optimistic => Arc::new(optimistic::Optimistic::open(conns, &cfg).await?),
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            Scheme::ForUpdate => {
                let pinned = connect(&cfg, cfg.pool, &store).await?;
                Arc::new(pinned::Pinned::new(for_update::ForUpdate::open(&conns, &cfg).await?, conns, pinned, &cfg))
            }
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            Scheme::Advisory => {
                let pinned = connect(&cfg, cfg.pool, &store).await?;
                Arc::new(pinned::Pinned::new(advisory::Advisory::open(&conns, &cfg).await?, conns, pinned, &cfg))
            }
            #[allow(unreachable_patterns)]
            _ => return Err(Error::unsupported(format!("`?scheme={}` needs a database server", scheme.as_str()))),
        };
        let id = format!("sql-scheme:{}:{}:{}", scheme.as_str(), url.identity(), cfg.names.table);
        let claims = if cfg.exclusive {
            match claim::Claims::open(url).await {
                Ok(c) => Some(c),
                Err(e) => {
                    imp.close().await;
                    return Err(e);
                }
            }
        } else {
            None
        };
        let ident = match scheme {
            Scheme::Advisory => scheme.as_str().to_owned(),
            _ => format!("{}:{}", scheme.as_str(), cfg.names.table),
        };
        Ok(Some(SchemeStore { scheme, imp, id, claims, ident }))
    }

    /// The refusal of everything but plain locks, naming where it is.
    fn only_locks(&self, key: &Key) -> Error {
        let what = if key.family == Family::Lock { "fair locks" } else { key.family.as_str() };
        Error::unsupported(format!(
            "{key}: the SQL lock scheme `{}` has plain locks only; {what} need baton's own SQL design \
             (the URL without `scheme`, or `scheme=state`), which has every primitive",
            self.scheme.as_str()
        ))
    }

    fn check(&self, key: &Key, mode: Option<&Mode>) -> Result<()> {
        match (key.family, mode) {
            (Family::Lock, None | Some(Mode::Exclusive)) => Ok(()),
            _ => Err(self.only_locks(key)),
        }
    }
}

/// Opens a pool of at most `max` connections to the database `cfg` names.
async fn connect(cfg: &SchemeConfig, max: u32, store: &str) -> Result<Pool> {
    match &cfg.db {
        #[cfg(feature = "postgres")]
        SqlConfig::Postgres(server) => {
            let options =
                sqlx::postgres::PgPoolOptions::new().max_connections(max).acquire_timeout(Duration::from_secs(10));
            Ok(Pool::Pg(super::open_pool(options, server.postgres()?, store).await?))
        }
        #[cfg(feature = "mysql")]
        SqlConfig::Mysql(server) => {
            let options =
                sqlx::mysql::MySqlPoolOptions::new().max_connections(max).acquire_timeout(Duration::from_secs(10));
            Ok(Pool::My(super::open_pool(options, server.mysql()?, store).await?))
        }
        #[cfg(feature = "sqlite")]
        SqlConfig::Sqlite(file) => {
            // The lease clock's base, read once the first connection is up; every
            // connection's `baton_now_ms()` reads it.
            let base = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let on_each = base.clone();
            let options = sqlx::sqlite::SqlitePoolOptions::new().max_connections(max).after_connect(move |conn, _| {
                let base = on_each.clone();
                Box::pin(async move { super::boot_clock::register(conn, base).await })
            });
            let (pool, b) = super::sqlite::open_file(file, file.busy_timeout, options, |pool| async move {
                let b = super::boot_clock::base(&pool).await?;
                Ok((pool, b))
            })
            .await?;
            base.store(b, std::sync::atomic::Ordering::Release);
            Ok(Pool::Lite(pool))
        }
    }
}

/// Runs a scheme's `CREATE TABLE IF NOT EXISTS` statements (unless `?create=false`).
/// PostgreSQL creators take a transaction-scoped advisory lock first: concurrent
/// `CREATE TABLE IF NOT EXISTS` can collide in its catalog.
pub(crate) async fn create(conns: &Conns, cfg: &SchemeConfig, statements: &[String]) -> Result<()> {
    if !cfg.create {
        return Ok(());
    }
    let err = db::err(&conns.store);
    let mut tx = conns.pool.begin().await.map_err(&err)?;
    if conns.pool.dialect() == Dialect::Postgres {
        tx.ex().exec("SELECT pg_advisory_xact_lock(hashtext('baton_state'))", &[]).await.map_err(&err)?;
    }
    for s in statements {
        tx.ex().exec(s, &[]).await.map_err(&err)?;
    }
    tx.commit().await.map_err(&err)
}

fn lease_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl SchemeStore {
    /// Gives back a grant of the scheme's own whose claim failed. No waiter is woken:
    /// nothing was free for them. The claim's own failure is often the database being
    /// busy (a pool or statement timeout under hundreds of attempts), which the first
    /// release may meet too: a few tries, about 3 s in all, before leaving the hold to its
    /// lease (a cancelled acquire's hold under a 120 s lease outlasted the behaviour
    /// suite's 60 s bound once, in a CI run).
    async fn undo(&self, name: &str, holder: &str) {
        let mut pause = Duration::from_millis(50);
        for _ in 0..6 {
            if self.imp.release(name, holder, u32::MAX).await.is_ok() {
                return;
            }
            crate::rt::sleep(pause).await;
            pause *= 2;
        }
    }
}

#[async_trait]
impl Store for SchemeStore {
    /// The scheme's own grant, then its claim (`claim`): a name held under another
    /// design is busy, and the own grant is given back.
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        self.check(key, Some(&req.mode))?;
        let got = self.imp.acquire(&key.name, req).await?;
        let Attempt::Granted { token, count, fresh: true } = got else { return Ok(got) };
        let Some(claims) = &self.claims else { return Ok(got) };
        let claimed = claims.take(&key.name, &self.ident, &req.holder, req.lease_ms, token).await;
        match claimed {
            Ok(claim::Claimed::Granted(t)) => {
                if t != token
                    && let Err(e) = self.imp.adopt(&key.name, &req.holder, t).await
                {
                    self.undo(&key.name, &req.holder).await;
                    let _ = claims.release(&key.name, &self.ident, &req.holder).await;
                    return Err(e);
                }
                Ok(Attempt::Granted { token: t, count, fresh: true })
            }
            Ok(claim::Claimed::Busy { retry_ms }) => {
                self.undo(&key.name, &req.holder).await;
                Ok(Attempt::Busy { retry_ms })
            }
            Err(e) => {
                self.undo(&key.name, &req.holder).await;
                // The claim may have been written with its answer lost.
                let _ = claims.release(&key.name, &self.ident, &req.holder).await;
                Err(e)
            }
        }
    }

    /// The scheme's own renewal, then the claim's; a claim gone is a lost lock (the own
    /// hold is given back).
    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        self.check(key, None)?;
        if !self.imp.renew(&key.name, holder, lease_ms(lease)).await? {
            return Ok(false);
        }
        let Some(claims) = &self.claims else { return Ok(true) };
        if claims.renew(&key.name, &self.ident, holder, lease).await? {
            return Ok(true);
        }
        self.undo(&key.name, holder).await;
        Ok(false)
    }

    /// Every renewal of the batch at once (each is one statement on its own connection).
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        let all = futures_util::future::join_all(items.iter().map(|(k, h)| self.renew(k, h, lease))).await;
        all.into_iter().collect()
    }

    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        self.check(key, None)?;
        let out = self.imp.release(&key.name, holder, count).await?;
        if let Some(claims) = &self.claims
            && !matches!(out, Released::StillHeld(_))
        {
            // Best effort: a claim left behind keeps other designs out until its lease ends.
            let _ = claims.release(&key.name, &self.ident, holder).await;
        }
        if out == Released::Freed {
            wait::handoff(&self.id, &key.name).notify_one();
        }
        Ok(out)
    }

    async fn leave_queue(&self, _key: &Key, _holder: &str) -> Result<()> {
        Ok(())
    }

    fn loss_watch(&self, key: &Key, holder: &str) -> Option<crate::store::LossWatch> {
        self.imp.loss_watch(&key.name, holder)
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        self.check(key, None)?;
        Ok(Box::new(wait::Waiter::start(self.imp.clone(), &self.id, &key.name).await?))
    }

    async fn inspect(&self, key: &Key) -> Result<Inspection> {
        self.check(key, None)?;
        let (mut s, now) = self.imp.read(&key.name).await?;
        // A hold under another design (baton's own, another scheme) shows as well.
        if let Some(claims) = &self.claims {
            let (claims, claims_now_us) = claims.read(&key.name).await?;
            let view = crate::state::inspect(&claims, claims_now_us);
            let ours = claim::holder(&self.ident, "");
            for h in view.holds.into_iter().filter(|h| !h.holder.starts_with(&ours)) {
                let left = h.expires_ms.saturating_sub(claims_now_us / 1000);
                s.holds.push(crate::state::Hold { expires_ms: now.saturating_add(left), ..h });
            }
            s.fence = s.fence.max(claims.fence);
        }
        Ok(Inspection::from_state(key, &s, now))
    }

    async fn latch_try_set(&self, key: &Key, _count: u64) -> Result<bool> {
        Err(self.only_locks(key))
    }

    async fn latch_count_down(&self, key: &Key) -> Result<u64> {
        Err(self.only_locks(key))
    }

    async fn latch_count(&self, key: &Key) -> Result<u64> {
        Err(self.only_locks(key))
    }

    async fn close(&self) {
        self.imp.close().await;
        if let Some(claims) = &self.claims {
            claims.close().await;
        }
    }

    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn crate::store::Diagnostics> {
        Some(self)
    }
}

#[cfg(feature = "bench")]
#[async_trait]
impl crate::store::Diagnostics for SchemeStore {
    async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, Duration)>> {
        self.imp.yardsticks(name).await
    }
}
