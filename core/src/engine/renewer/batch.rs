//! The watchdog leases' renewals, sent in batches of `BATCH` per store call.

use std::sync::Arc;
use std::time::Duration;

use super::{BATCH, Entry, Kind, Shared};
use crate::engine::Held;
use crate::key::Key;
use crate::rt::{Instant, timeout};
use crate::store::Store;

/// One renewal due now.
pub(super) struct Due {
    pub(super) id: u64,
    pub(super) held: Arc<Held>,
    pub(super) lease: Duration,
    pub(super) period: Duration,
}

/// Sends one set of renewals. Each batch waits for its answer at most one renewal period
/// (then it is retried, perhaps over a new connection); an answer counts from the moment
/// its request was sent, and only while the grant is still live.
pub(super) async fn renew(shared: Arc<Shared>, store: Arc<dyn Store>, mut due: Vec<Due>) {
    due.sort_by_key(|d| (d.lease, d.period));
    for chunk in due.chunk_by(|a, b| a.lease == b.lease).flat_map(|c| c.chunks(BATCH)) {
        let lease = chunk[0].lease;
        let patience = chunk.iter().map(|d| d.period).min().unwrap_or(lease).max(Duration::from_millis(100));
        let items: Vec<(Key, String)> = chunk.iter().map(|d| (d.held.key.clone(), d.held.holder.clone())).collect();
        let sent = Instant::now();
        let out = match timeout(patience, store.renew_many(&items, lease)).await {
            Ok(Ok(v)) if v.len() == items.len() => Some(v),
            _ => None,
        };
        let renewed = out.as_ref().map_or(0, |v| v.iter().filter(|ok| **ok).count());
        crate::observe::renewals(renewed, chunk.len() - renewed);
        let mut entries = shared.entries();
        let mut lost = Vec::new();
        let mut look: Option<Instant> = None;
        for (i, d) in chunk.iter().enumerate() {
            let Some(Entry { kind: Kind::Watchdog { due, sending, .. }, .. }) = entries.map.get_mut(&d.id) else {
                continue;
            };
            *sending = false;
            let next = match out.as_ref().map(|v| v[i]) {
                Some(true) if !d.held.lost.is_cancelled() => {
                    d.held.extended(sent, lease);
                    sent + d.period
                }
                Some(_) => {
                    entries.map.remove(&d.id);
                    lost.push(d.held.clone());
                    continue;
                }
                // Failed but the lease may still stand: retry sooner than a full period.
                None => Instant::now() + (d.period / 4).max(Duration::from_millis(50)),
            };
            *due = next;
            let at = next.checked_sub(d.period / 3).unwrap_or(next);
            look = Some(look.map_or(at, |l| l.min(at)));
        }
        match look {
            Some(at) => shared.look_by(entries, at),
            None => drop(entries),
        }
        for held in lost {
            held.mark_lost();
        }
    }
}
