//! What `for-update` and `advisory` share: a held lock is a server session (a connection
//! of the `pinned` pool, taken out for as long as the hold lasts) that holds a row lock or
//! an advisory lock. The server ends the session, and so the lock, when the connection
//! closes or stays idle past the lease (`idle_in_transaction_session_timeout` /
//! `idle_session_timeout` on PostgreSQL, `wait_timeout` on MySQL): that is the lease, and
//! each renewal is a statement on the connection. Re-entry is counted here (a hold lives in
//! the process that took it); the token comes from the counter table. The connection's
//! socket is watched while held (`watch`): its closing is the hold's loss, signalled at
//! once (`Store::loss_watch`), not at the next renewal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use tokio::time::Instant;

use super::config::SchemeConfig;
use super::db::{Conn, Ex, Pool, Tx, err, is_io};
use super::{Conns, LockScheme, fence};
use crate::error::{Error, Result};
use crate::state::{Attempt, Hold as StateHold, HoldMode, KeyState, Released, Request};
use crate::sync::LockExt;

/// A pinned connection: in a transaction (`for-update`) or not (`advisory`).
pub(crate) enum Held {
    Tx(Tx),
    Conn(Conn),
}

impl Held {
    pub(crate) fn ex(&mut self) -> Ex<'_> {
        match self {
            Held::Tx(t) => t.ex(),
            Held::Conn(c) => c.ex(),
        }
    }

    /// Ends the session's hold the hard way: the transaction is rolled back, the
    /// connection closed (the server drops its locks with it).
    async fn abandon(self) {
        match self {
            Held::Tx(t) => drop(tokio::time::timeout(Duration::from_secs(2), t.rollback()).await),
            Held::Conn(c) => c.close().await,
        }
    }
}

/// The statements of one session scheme.
#[async_trait]
pub(crate) trait Session: Send + Sync + 'static {
    /// Tries to take `name` on `conn`, the server ending the session after `lease_ms` of
    /// silence: the pinned connection and the server's session id, or `None` (busy; the
    /// connection went back to the pool).
    async fn take(&self, conns: &Conns, conn: Conn, name: &str, lease_ms: u64) -> sqlx::Result<Option<(Held, i64)>>;
    /// Keeps the session alive `lease_ms` more.
    async fn keep(&self, held: &mut Held, lease_ms: u64) -> sqlx::Result<()>;
    /// Gives the lock up and the connection back.
    async fn give_back(&self, held: Held, name: &str) -> sqlx::Result<()>;
    /// Whether a session holds `name`, and which (`-1`: held, session unknown).
    async fn holder(&self, pool: &Pool, name: &str) -> sqlx::Result<Option<i64>>;
    /// How `inspect` names a session nobody of baton's took the lock in.
    fn foreign(&self, session: i64) -> String;
    /// Whether [`Session::holder`] takes no lock of its own, so waiters may poll it
    /// (otherwise they poll the counter row, which a release marks).
    fn cheap_holder(&self) -> bool;
}

/// One held lock of this process.
struct Hold {
    holder: String,
    count: u32,
    token: u64,
    held: Held,
    session: i64,
    /// When the server ends the session unless renewed.
    deadline: Instant,
    /// The watch of the connection's socket (none where it was not found).
    watch: Option<Watch>,
}

#[cfg(unix)]
use super::watch::Watch;

/// No socket watch on this platform: holds end at their renewal or lease.
#[cfg(not(unix))]
pub(crate) struct Watch {
    lost: tokio_util::sync::CancellationToken,
    over: tokio_util::sync::CancellationToken,
}

/// The signals of a watched hold that the engine has not asked for yet: its holder,
/// `lost` and `over` (`Watch`).
type Signals = (String, tokio_util::sync::CancellationToken, tokio_util::sync::CancellationToken);

type Slot = Arc<tokio::sync::Mutex<Option<Hold>>>;

pub(crate) struct Pinned<S> {
    s: S,
    c: Conns,
    pinned: Pool,
    max: u32,
    fence_table: String,
    /// One slot per name: steps on one name run one at a time in this process.
    slots: Mutex<HashMap<String, Slot>>,
    /// The ports of each session's connection and where its socket was found last.
    ports: Mutex<HashMap<i64, (u16, u16, i32)>>,
    /// Fresh grants' watches, until the engine asks for them (`loss_watch`).
    signals: Mutex<HashMap<String, Signals>>,
}

impl<S: Session> Pinned<S> {
    pub(crate) fn new(s: S, c: Conns, pinned: Pool, cfg: &SchemeConfig) -> Pinned<S> {
        Pinned {
            s,
            c,
            pinned,
            max: cfg.pool,
            fence_table: cfg.names.fence_table.clone(),
            slots: Mutex::default(),
            ports: Mutex::default(),
            signals: Mutex::default(),
        }
    }

    /// Watches the socket of `held`'s connection (session `session`): the server's view of
    /// its ports, asked once per connection, finds it among this process's descriptors.
    #[cfg(unix)]
    async fn watch(&self, held: &mut Held, session: i64) -> Option<Watch> {
        let cached = self.ports.locked().get(&session).copied();
        let mut found = cached.and_then(|(l, p, fd)| super::watch::find(l, p, Some(fd)).map(|f| (f, l, p)));
        if found.is_none() {
            let sql = if self.c.pool.dialect() == super::db::Dialect::Mysql {
                "SELECT CAST(SUBSTRING_INDEX(HOST, ':', -1) AS SIGNED), CAST(@@port AS SIGNED) \
                 FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()"
            } else {
                "SELECT COALESCE(inet_client_port(), -1)::bigint, COALESCE(inet_server_port(), -1)::bigint"
            };
            let (l, p): (Option<i64>, Option<i64>) = held.ex().one(sql, &[]).await.ok()?;
            let (l, p) = (u16::try_from(l?).ok()?, u16::try_from(p?).ok()?);
            found = super::watch::find(l, p, None).map(|f| (f, l, p));
        }
        let ((fd, raw), l, p) = found?;
        {
            let mut ports = self.ports.locked();
            if ports.len() >= 4096 {
                ports.clear();
            }
            ports.insert(session, (l, p, raw));
        }
        Watch::start(fd)
    }

    #[cfg(not(unix))]
    async fn watch(&self, _held: &mut Held, _session: i64) -> Option<Watch> {
        None
    }

    fn slot(&self, name: &str) -> Slot {
        self.slots.locked().entry(name.to_owned()).or_default().clone()
    }

    fn exhausted(&self) -> Error {
        Error::connection(format!(
            "{}: all {} connections of the pool are pinned by held locks (one per held lock); \
             release some, or raise `?pool=`",
            self.c.store, self.max
        ))
    }
}

/// The hold in `slot` if it is still alive; an expired one is ended (its session would be
/// closed by the server anyway).
async fn live(slot: &mut Option<Hold>) -> Option<&mut Hold> {
    let closed = |h: &Hold| h.watch.as_ref().is_some_and(|w| w.lost.is_cancelled());
    if slot.as_ref().is_some_and(|h| h.deadline <= Instant::now() || closed(h))
        && let Some(h) = slot.take()
    {
        h.held.abandon().await;
    }
    slot.as_mut()
}

fn wall_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0))
}

#[async_trait]
impl<S: Session> LockScheme for Pinned<S> {
    async fn acquire(&self, name: &str, req: &Request) -> Result<Attempt> {
        let slot = self.slot(name);
        let mut g = slot.lock().await;
        if let Some(h) = live(&mut g).await {
            if h.holder != req.holder {
                let left = h.deadline.saturating_duration_since(Instant::now());
                return Ok(Attempt::Busy { retry_ms: Some(u64::try_from(left.as_millis()).unwrap_or(0)) });
            }
            h.count = h.count.checked_add(1).ok_or_else(|| Error::invalid_argument("hold count overflow"))?;
            return Ok(Attempt::Granted { token: h.token, count: h.count, fresh: false });
        }
        let e = err(&self.c.store);
        let conn = self.pinned.conn_now().await.map_err(&e)?.ok_or_else(|| self.exhausted())?;
        let started = Instant::now();
        let Some((mut held, session)) = self.s.take(&self.c, conn, name, req.lease_ms).await.map_err(&e)? else {
            return Ok(Attempt::Busy { retry_ms: None });
        };
        let token = match fence::next(&self.c.pool, &self.fence_table, name, &req.holder, Some(session)).await {
            Ok(t) => t,
            Err(x) => {
                held.abandon().await;
                return Err(e(x));
            }
        };
        let watch = self.watch(&mut held, session).await;
        if let Some(w) = &watch {
            self.signals.locked().insert(name.to_owned(), (req.holder.clone(), w.lost.clone(), w.over.clone()));
        }
        let deadline = started + Duration::from_millis(req.lease_ms);
        *g = Some(Hold { holder: req.holder.clone(), count: 1, token, held, session, deadline, watch });
        Ok(Attempt::Granted { token, count: 1, fresh: true })
    }

    async fn renew(&self, name: &str, holder: &str, lease_ms: u64) -> Result<bool> {
        let slot = self.slot(name);
        let mut g = slot.lock().await;
        let Some(h) = live(&mut g).await.filter(|h| h.holder == holder) else { return Ok(false) };
        let sent = Instant::now();
        match self.s.keep(&mut h.held, lease_ms).await {
            Ok(()) => {
                h.deadline = sent + Duration::from_millis(lease_ms);
                Ok(true)
            }
            Err(x) if is_io(&x) => {
                // The connection is gone, and the server ended the session with it.
                if let Some(h) = g.take() {
                    h.held.abandon().await;
                }
                Ok(false)
            }
            Err(x) => Err(err(&self.c.store)(x)),
        }
    }

    async fn release(&self, name: &str, holder: &str, count: u32) -> Result<Released> {
        let slot = self.slot(name);
        let mut g = slot.lock().await;
        let Some(h) = live(&mut g).await.filter(|h| h.holder == holder) else { return Ok(Released::NotHeld) };
        if count != u32::MAX && count < h.count {
            h.count -= count;
            return Ok(Released::StillHeld(h.count));
        }
        let Some(h) = g.take() else { return Ok(Released::NotHeld) };
        {
            let mut signals = self.signals.locked();
            if signals.get(name).is_some_and(|s| s.0 == holder) {
                signals.remove(name);
            }
        }
        let mark = fence::released(&self.c.pool, &self.fence_table, name, h.session);
        let gave = if self.s.cheap_holder() {
            // Waiters poll the lock itself, not the mark: both at once, each on its own
            // connection (one round trip less).
            let (gave, marked) = tokio::join!(self.s.give_back(h.held, name), mark);
            gave.map(|()| marked)
        } else {
            // Waiters poll the mark: it must not say free before the lock is.
            match self.s.give_back(h.held, name).await {
                Ok(()) => Ok(mark.await),
                Err(x) => Err(x),
            }
        };
        match gave {
            Ok(marked) => {
                marked.map_err(err(&self.c.store))?;
                Ok(Released::Freed)
            }
            // The session died before: the lock was lost then, not released now.
            Err(x) if is_io(&x) => Ok(Released::NotHeld),
            Err(x) => Err(err(&self.c.store)(x)),
        }
    }

    async fn read(&self, name: &str) -> Result<(KeyState, u64)> {
        let e = err(&self.c.store);
        let last = fence::last(&self.c.pool, &self.fence_table, name).await.map_err(&e)?;
        let now = wall_ms();
        let mut s = KeyState { fence: last.as_ref().map_or(0, |l| l.0), ..KeyState::default() };
        let slot = self.slot(name);
        let mut g = slot.lock().await;
        if let Some(h) = live(&mut g).await {
            let left = h.deadline.saturating_duration_since(Instant::now());
            let expires_ms = now + u64::try_from(left.as_millis()).unwrap_or(0);
            let (holder, count, token) = (h.holder.clone(), h.count, h.token);
            s.holds.push(StateHold { holder, mode: HoldMode::Exclusive, count, token, expires_ms, value: None });
            return Ok((s, now));
        }
        drop(g);
        if let Some(session) = self.s.holder(&self.c.pool, name).await.map_err(&e)? {
            // Taken by baton elsewhere (the counter row names the session), or by plain SQL.
            let (holder, token) = match last {
                Some((token, Some(h), s)) if s == session || session == -1 => (h, token),
                _ => (self.s.foreign(session), 0),
            };
            // The lease of another process's session is not known here.
            let expires_ms = now + 100 * 365 * 86_400_000;
            s.holds.push(StateHold { holder, mode: HoldMode::Exclusive, count: 1, token, expires_ms, value: None });
        }
        Ok((s, now))
    }

    async fn version(&self, name: &str) -> Result<i64> {
        let e = err(&self.c.store);
        let last = fence::last(&self.c.pool, &self.fence_table, name).await.map_err(&e)?;
        let (fence, session) = last.map_or((0, -1), |l| (l.0, l.2));
        let held = if self.s.cheap_holder() {
            self.s.holder(&self.c.pool, name).await.map_err(&e)?.is_some()
        } else {
            session >= 0
        };
        Ok(i64::try_from(fence).unwrap_or(0).saturating_mul(2) + i64::from(held))
    }

    fn loss_watch(&self, name: &str, holder: &str) -> Option<crate::store::LossWatch> {
        let mut signals = self.signals.locked();
        let (h, lost, over) = signals.remove(name)?;
        if h != holder {
            signals.insert(name.to_owned(), (h, lost, over));
            return None;
        }
        Some(Box::pin(async move {
            tokio::select! {
                biased;
                () = over.cancelled() => false,
                () = lost.cancelled() => true,
            }
        }))
    }

    async fn adopt(&self, name: &str, holder: &str, token: u64) -> Result<()> {
        let slot = self.slot(name);
        if let Some(h) = slot.lock().await.as_mut().filter(|h| h.holder == holder) {
            h.token = token;
        }
        fence::adopt(&self.c.pool, &self.fence_table, name, token).await.map_err(err(&self.c.store))
    }

    async fn close(&self) {
        let slots: Vec<Slot> = self.slots.locked().drain().map(|(_, s)| s).collect();
        for slot in slots {
            if let Some(h) = slot.lock().await.take() {
                h.held.abandon().await;
            }
        }
        self.pinned.close().await;
        self.c.pool.close().await;
    }

    /// An uncontended cycle's statements, one after the other: the pool checkout of the
    /// connection to pin, the scheme's take (its lock statement and the session's lease),
    /// the counter, the give-back and the counter row's release mark.
    #[cfg(feature = "bench")]
    async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, Duration)>> {
        let e = err(&self.c.store);
        let mut t = crate::store::Stopwatch::start();
        let conn = self.pinned.conn_now().await.map_err(&e)?.ok_or_else(|| self.exhausted())?;
        t.lap("checkout");
        let Some((held, session)) = self.s.take(&self.c, conn, name, 30_000).await.map_err(&e)? else {
            return Err(Error::backend(format!("{}: the yardstick's name `{name}` is held", self.c.store)));
        };
        t.lap("take");
        let token = fence::next(&self.c.pool, &self.fence_table, name, "yardstick", Some(session)).await;
        t.lap("token");
        self.s.give_back(held, name).await.map_err(&e)?;
        t.lap("give_back");
        let marked = fence::released(&self.c.pool, &self.fence_table, name, session).await;
        t.lap("released");
        token.map_err(&e)?;
        marked.map_err(&e)?;
        Ok(t.laps())
    }
}

/// Sets the session's idle limit to the lease: MySQL's `wait_timeout` (whole seconds, at
/// least one), or the PostgreSQL setting `pg_setting` (for this transaction only when
/// `in_tx`).
pub(crate) async fn set_lease(
    d: super::db::Dialect,
    held: &mut Held,
    lease_ms: u64,
    pg_setting: &str,
    in_tx: bool,
) -> sqlx::Result<()> {
    use super::db::{Arg, Dialect};
    if d == Dialect::Mysql {
        let sql = format!("SET SESSION wait_timeout = {}", lease_ms.div_ceil(1000).max(1));
        return held.ex().exec(&sql, &[]).await.map(drop);
    }
    let ms = lease_ms.to_string();
    let sql = format!("SELECT set_config('{pg_setting}', $1, {in_tx})");
    held.ex().opt::<(String,)>(&sql, &[Arg::S(&ms)]).await.map(drop)
}
