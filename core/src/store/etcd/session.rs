//! The client's session leases, as clientv3's `concurrency.Session`: one lease per client
//! (per lease length), granted lazily by the first watchdog hold and kept alive by one
//! loop for as long as the client lives; every watchdog hold of the Mutex layout puts its
//! key under it, so an uncontended acquire is one txn and a release one delete. A session
//! lease found gone (a paused or cut-off process) is never used again: every hold under it
//! reports its loss at its next renewal, and the next hold gets a new session. So is a
//! session under which a release failed with an unknown outcome: the keep-alive loop would
//! otherwise keep that hold for the client's life.
//!
//! `ttl` holds (an explicit lease that `extend` changes) keep a lease of their own: a
//! session lease is shared, so its length cannot be one hold's.

use crate::sync::LockExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::rt::Instant;

use super::transport::Transport;
use crate::error::Result;
use crate::rt::AbortOnDrop;

/// One session lease.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) lease: i64,
    ttl_s: i64,
    lost: AtomicBool,
    /// When the last keep-alive that etcd answered "alive" was sent (etcd restarted the
    /// lease's ttl on receiving it, so later than this).
    alive_at: Mutex<Instant>,
    /// One keep-alive at a time; callers that waited for it share its answer.
    turn: tokio::sync::Mutex<()>,
}

/// The keep-alive period of a session lease of `ttl_s` seconds.
fn period(ttl_s: i64) -> Duration {
    Duration::from_millis(u64::try_from(ttl_s).unwrap_or(1).saturating_mul(1000) / 3)
}

/// How long before a renewal asked a keep-alive it reuses may have been sent (a tenth of
/// the period, at most 250 ms): the renewals of one batch, asked together, share one
/// keep-alive however long it takes. A renewal that reuses one vouches for the lease from
/// when that keep-alive was sent, up to this much before the renewal: the store's lease
/// margin covers it (`Etcd::lease_margin`).
pub(crate) fn freshness(ttl_s: i64) -> Duration {
    (period(ttl_s) / 10).min(Duration::from_millis(250))
}

impl Session {
    fn period(&self) -> Duration {
        period(self.ttl_s)
    }

    /// Whether the lease is still alive: from a keep-alive sent lately (`freshness` before
    /// this call at most), else from a new one.
    pub(crate) async fn refresh(&self, t: &dyn Transport) -> Result<bool> {
        let asked = Instant::now();
        let _turn = self.turn.lock().await;
        if self.lost.load(Ordering::Acquire) {
            return Ok(false);
        }
        let before = *self.alive_at.locked();
        if before + freshness(self.ttl_s) >= asked {
            return Ok(true);
        }
        let sent = Instant::now();
        let alive = t.lease_keepalive(self.lease).await? > 0;
        // Answered in time: before any hold's engine could have reached its local deadline.
        if alive && Instant::now().saturating_duration_since(before) <= self.unvouched_after() {
            *self.alive_at.locked() = sent;
            return Ok(true);
        }
        // Gone, or alive but answered too late: the engine may already have given a hold
        // under it up for lost (its local deadline passed with no keep-alive answered in
        // time) and will never release it, so the session must not keep its key any longer.
        self.lost.store(true, Ordering::Release);
        Ok(false)
    }

    /// How long after the last answered keep-alive was sent a hold under this session is
    /// surely still counted as held by its engine: the ttl less the engine's margins (the drift margin,
    /// and this store's `freshness` twice: once for the renewal's reuse, once for slack).
    fn unvouched_after(&self) -> Duration {
        let ttl = Duration::from_secs(u64::try_from(self.ttl_s).unwrap_or(1));
        ttl.saturating_sub(crate::store::drift_margin(ttl) + freshness(self.ttl_s) * 2)
    }

    pub(crate) fn lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Never used again (a txn under it failed in a way that may mean it is gone).
    pub(crate) fn give_up(&self) {
        self.lost.store(true, Ordering::Release);
    }
}

/// A session and its keep-alive loop (stopped when dropped).
type Live = (Arc<Session>, AbortOnDrop<()>);

/// The session leases of one client, by lease length.
#[derive(Debug)]
pub(crate) struct Sessions {
    t: Arc<dyn Transport>,
    live: Mutex<HashMap<i64, Live>>,
    /// One grant at a time, so that concurrent first holds share one lease.
    granting: tokio::sync::Mutex<()>,
}

impl Sessions {
    pub(crate) fn new(t: Arc<dyn Transport>) -> Sessions {
        Sessions { t, live: Mutex::default(), granting: tokio::sync::Mutex::default() }
    }

    fn current(&self, ttl_s: i64) -> Option<Arc<Session>> {
        let live = self.live.locked();
        live.get(&ttl_s).map(|(s, _)| s.clone()).filter(|s| !s.lost())
    }

    /// The live session of `ttl_s` seconds, granted now if there is none.
    pub(crate) async fn get(&self, ttl_s: i64) -> Result<Arc<Session>> {
        if let Some(s) = self.current(ttl_s) {
            return Ok(s);
        }
        let _one = self.granting.lock().await;
        if let Some(s) = self.current(ttl_s) {
            return Ok(s);
        }
        let sent = Instant::now();
        let lease = self.t.lease_grant(ttl_s).await?;
        let s = Arc::new(Session {
            lease,
            ttl_s,
            lost: AtomicBool::new(false),
            alive_at: Mutex::new(sent),
            turn: tokio::sync::Mutex::default(),
        });
        let task = AbortOnDrop(crate::rt::spawn(keep_alive(self.t.clone(), Arc::downgrade(&s))));
        self.live.locked().insert(ttl_s, (s.clone(), task));
        Ok(s)
    }

    /// The transport the sessions are kept alive over.
    pub(crate) fn transport(&self) -> Arc<dyn Transport> {
        self.t.clone()
    }

    /// The session (live or lost) whose lease is `lease`, if it is one.
    pub(crate) fn find(&self, lease: i64) -> Option<Arc<Session>> {
        let live = self.live.locked();
        live.values().map(|(s, _)| s).find(|s| s.lease == lease).cloned()
    }

    /// Whether `lease` is a session lease of this client (never revoked by one hold).
    pub(crate) fn owns(&self, lease: i64) -> bool {
        self.find(lease).is_some()
    }

    /// A release of a key under `lease` failed with an unknown outcome (its txn erred):
    /// if that is a session lease, the key may still be there, and the keep-alive loop
    /// would keep it for as long as the client lives. The session is given up, so the key
    /// ends with the lease — the engine's rule for a failed release — and the other holds
    /// under it report their loss at their next renewal, as under a lost clientv3 session.
    pub(crate) fn release_failed(&self, lease: i64) {
        if let Some(s) = self.find(lease) {
            s.give_up();
        }
    }

    /// [`release_failed`](Self::release_failed) when the read that would have named the
    /// key's lease failed: any session may hold it, so every one is given up.
    pub(crate) fn release_failed_unread(&self) {
        for (s, _) in self.live.locked().values() {
            s.give_up();
        }
    }

    /// Stops the loops and revokes the leases (their keys go with them, as when a
    /// clientv3 session is closed).
    pub(crate) async fn close(&self) {
        let all: Vec<_> = self.live.locked().drain().map(|(_, v)| v).collect();
        for (s, task) in all {
            drop(task);
            if !s.lost() {
                let _ = self.t.lease_revoke(s.lease).await;
            }
        }
    }
}

/// The keep-alive loop of one session: every third of its ttl; ends when the session is
/// dropped or found gone, or when etcd has not answered for a whole ttl.
async fn keep_alive(t: Arc<dyn Transport>, s: Weak<Session>) {
    loop {
        let Some(period) = s.upgrade().map(|s| s.period()) else { return };
        crate::rt::sleep(period.max(Duration::from_millis(100))).await;
        let Some(s) = s.upgrade() else { return };
        match s.refresh(&*t).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(_) => {
                let since = s.alive_at.locked().elapsed();
                if since > s.period() * 3 {
                    s.give_up();
                    return;
                }
            }
        }
    }
}
