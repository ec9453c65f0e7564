//! Semaphore and PermitSemaphore: one key per hold, `NAME/permits/<holder id>` (for a
//! PermitSemaphore the holder id is the permit id), its value carrying the number of
//! permits, under an etcd lease (see `keyed`: the client's session lease for a watchdog
//! hold, else one of the hold's own length): a holder that vanished gives its permits back
//! when etcd ends the lease, on the server's clock.
//!
//! The rule is every store's (`crate::state`): a request for `count` of `limit` permits is
//! granted when the permits held plus `count` fit in `limit`; there is no queue (permits
//! are not fair anywhere in baton). The grant is a txn guarded on no key under the prefix
//! having been created or rewritten since the read it decided on: a concurrent grant makes
//! it read again; a concurrent release only frees permits.

use std::hash::{Hash, Hasher};

use async_trait::async_trait;

use super::keyed::{self, Blocker, Held, RACES, key_of, raced};
use super::local::Local;
use super::transport::{Compare, Range, Transport};
use crate::error::{Error, Result};
use crate::state::{Attempt, Mode, Request};

/// The keys of one semaphore name.
#[derive(Debug, Clone)]
pub(crate) struct SemKeys {
    /// `NAME/permits/`
    pub(crate) permits: Vec<u8>,
    /// `baton/semaphore/NAME`: the last token released.
    pub(crate) fence: Vec<u8>,
    /// NAME, for errors.
    pub(crate) name: String,
}

impl SemKeys {
    pub(crate) fn new(name: &str) -> SemKeys {
        SemKeys {
            permits: format!("{name}/permits/").into_bytes(),
            fence: format!("baton/semaphore/{name}").into_bytes(),
            name: name.to_owned(),
        }
    }

    pub(crate) fn own(&self, holder: &str) -> Vec<u8> {
        key_of(&self.permits, holder)
    }
}

/// One acquire attempt (see `Store::acquire`).
pub(crate) async fn acquire(t: &dyn Transport, local: &Local, keys: &SemKeys, req: &Request) -> Result<Attempt> {
    let Mode::Permits { count, limit } = req.mode else {
        return Err(Error::backend(format!("etcd: internal error: {:?} on a semaphore", req.mode)));
    };
    for _ in 0..RACES {
        let r = t.range(Range::prefix(&keys.permits)).await?;
        let hs = keyed::parse(&r);
        // Under the same guard as the grant: a permit of another size granted since the
        // read makes the txn fail and the check run again.
        crate::state::check_size(&keys.name, recorded_size(&hs), limit)?;
        if let Some(h) = hs.iter().find(|h| h.is(&req.holder)) {
            // Re-entry by the same holder id (the state machine's rule: one more).
            match keyed::reenter(t, h).await? {
                Some(a) => return Ok(a),
                None => continue,
            }
        }
        let used: u64 = hs.iter().map(|h| u64::from(h.count())).sum();
        if used + u64::from(count) > u64::from(limit) {
            return Ok(Attempt::Busy { retry_ms: None });
        }
        let guard = vec![Compare::unchanged_under_since(&keys.permits, r.revision)];
        let (key, lease) = (keys.own(&req.holder), (req.lease_ms, req.watchdog));
        if let Some(token) = keyed::create(t, local, &key, (&req.holder, count, Some(limit)), lease, guard).await? {
            return Ok(Attempt::Granted { token, count, fresh: true });
        }
    }
    Err(raced())
}

/// The semaphore's size as the live permit keys record it (each records its grant's; they
/// agree, as a grant checks the others'). Keys written before sizes were recorded say
/// nothing.
pub(crate) fn recorded_size(hs: &[Held]) -> Option<u32> {
    hs.iter().find_map(|h| h.value.as_ref().and_then(|v| v.permits))
}

/// What a permit waiter waits on: one hold whose going (or shrinking) would let it in on
/// its own if there is one, else any hold; among those, one chosen by the waiter's id, so
/// that waiters spread over the holds instead of all watching one. Any change of that key
/// wakes (a partial release frees permits too). Holds freed elsewhere are seen at the
/// engine's re-check (every second) at the latest.
pub(crate) struct SemBlocker {
    pub(crate) keys: SemKeys,
    pub(crate) req: Option<Request>,
}

#[async_trait]
impl Blocker for SemBlocker {
    async fn blocking(&self, t: &dyn Transport) -> Result<Option<(Vec<u8>, bool)>> {
        let hs = keyed::parse(&t.range(Range::prefix(&self.keys.permits)).await?);
        Ok(pick(&hs, self.req.as_ref()).map(|h| (h.kv.key.clone(), false)))
    }
}

fn pick<'a>(hs: &'a [Held], req: Option<&Request>) -> Option<&'a Held> {
    let Some(req) = req else { return hs.last() };
    let Mode::Permits { count, limit } = req.mode else { return hs.last() };
    let others: Vec<&Held> = hs.iter().filter(|h| !h.is(&req.holder)).collect();
    let used: u64 = others.iter().map(|h| u64::from(h.count())).sum();
    // Permits that must come back before this request fits.
    let need = (used + u64::from(count)).saturating_sub(u64::from(limit));
    let enough: Vec<&Held> = others.iter().copied().filter(|h| u64::from(h.count()) >= need).collect();
    let from = if enough.is_empty() { others } else { enough };
    if from.is_empty() {
        return None;
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    req.holder.hash(&mut hasher);
    let i = usize::try_from(hasher.finish() % from.len() as u64).unwrap_or(0);
    from.get(i).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(holder: &str, count: u32, rev: i64) -> Held {
        super::super::keyed::test_held(b"s/permits/", holder, count, rev)
    }

    #[test]
    fn waiters_watch_a_hold_that_would_let_them_in() {
        let hs = vec![held("a", 1, 1), held("b", 3, 2), held("c", 1, 3)];
        let req = |h: &str, count| Request {
            holder: h.into(),
            mode: Mode::Permits { count, limit: 5 },
            lease_ms: 1000,
            enqueue: false,
            queue_ttl_ms: 5000,
            watchdog: true,
            shared: false,
            token_floor: None,
            value: None,
        };
        // 5 used of 5; 3 wanted: only b's going is enough.
        for w in ["w1", "w2", "w3", "w4"] {
            assert!(pick(&hs, Some(&req(w, 3))).unwrap().is("b"));
        }
        // 1 wanted: any hold; the waiters spread over them.
        let seen: std::collections::HashSet<String> =
            (0..32).map(|i| pick(&hs, Some(&req(&format!("w{i}"), 1))).unwrap().owner()).collect();
        assert!(seen.len() > 1, "{seen:?}");
        assert!(pick(&[], Some(&req("w", 1))).is_none());
    }
}
