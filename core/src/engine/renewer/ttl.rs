//! The explicit-ttl leases: not renewed, lost at their local deadline unless the store,
//! asked a little before it, says the lease was extended from elsewhere.

use std::sync::Arc;
use std::time::Duration;

use super::{Kind, Shared};
use crate::engine::Held;
use crate::key::Key;
use crate::rt::{Instant, timeout_at};
use crate::store::Store;

/// How long before a ttl lease's local deadline the store is first asked whether it was
/// extended elsewhere: a quarter of the lease, within these bounds. An answer must arrive
/// before the deadline to count, and on a loaded host one store read can take several
/// hundred ms (etcd over TLS beside two test groups: a 3 s permit updated every 600 ms
/// from another client was reported lost when 250 ms ahead was all its answer had).
const TTL_ASK_AHEAD_MIN: Duration = Duration::from_millis(250);
pub(super) const TTL_ASK_AHEAD_MAX: Duration = Duration::from_secs(1);

/// How soon a store that could not tell is asked again, before the deadline; and, after a
/// first question asked early, not again before `TTL_ASK_AHEAD_MIN` ahead of it (the
/// number of questions stays that of a 250 ms lead).
const TTL_ASK_AGAIN: Duration = Duration::from_millis(100);

pub(super) fn ask_ahead(lease: Duration) -> Duration {
    (lease / 4).clamp(TTL_ASK_AHEAD_MIN, TTL_ASK_AHEAD_MAX)
}

pub(super) fn ask_at(deadline: Instant, ahead: Duration) -> Instant {
    deadline.checked_sub(ahead).unwrap_or(deadline)
}

/// Asks the store about a ttl lease near its local deadline: an answer that arrives in
/// time and moves the lease's end later (an extension from elsewhere) moves the local
/// deadline; gone fires the lost signal; otherwise the deadline stands.
pub(super) async fn check_ttl(shared: Arc<Shared>, store: Arc<dyn Store>, id: u64, held: Arc<Held>) {
    let (sent, end) = (Instant::now(), held.deadline());
    let left = timeout_at(end, lease_left(&*store, &held.key, &held.holder)).await;
    let mut entries = shared.entries();
    // Released or lapsed meanwhile: nothing to report.
    let Some(entry) = entries.map.get_mut(&id) else { return };
    let Kind::Ttl { ahead, .. } = entry.kind else { return };
    let mut settled = Some(end);
    let mut again = None;
    match left {
        Ok(Some(Some(left))) => {
            let later = crate::engine::local_end(&*store, sent, left);
            if later > end && held.deadline() == end {
                held.set_deadline(later);
                settled = None;
            } else {
                // Still held, no later than planned as far as the store can tell (etcd
                // counts whole seconds): an extension may yet land before the deadline.
                let next = (Instant::now() + TTL_ASK_AGAIN).max(ask_at(end, TTL_ASK_AHEAD_MIN));
                if next < end {
                    settled = None;
                    again = Some(next);
                }
            }
        }
        Ok(Some(None)) => {
            entries.map.remove(&id);
            drop(entries);
            held.mark_lost();
            return;
        }
        // No answer in time, or an error: the deadline stands.
        Ok(None) | Err(_) => {}
    }
    entry.kind = Kind::Ttl { checking: false, settled, again, ahead };
    let at = again.unwrap_or_else(|| ask_at(held.deadline(), ahead));
    shared.look_by(entries, at);
}

/// What the store says is left of `holder`'s lease: `Some(None)` when it holds nothing,
/// `Some(Some(left))` when it holds (zero when the store cannot tell: etcd reports whole
/// seconds), `None` with no answer.
async fn lease_left(store: &dyn Store, key: &Key, holder: &str) -> Option<Option<Duration>> {
    let info = store.inspect(key).await.ok()?;
    Some(info.holders.iter().find(|h| h.owner == holder).map(|h| h.lease_left.unwrap_or_default()))
}
