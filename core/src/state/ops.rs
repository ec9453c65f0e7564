//! The rules: who may be granted what, given the holds and queue of one key.

use super::{Attempt, Hold, HoldMode, KeyState, Mode, Released, Request, Waiter};
use crate::error::{Error, Result};

/// Drops expired holds and waiters. Expiry is the lease ending: a crashed holder frees
/// its grant here, the next time anyone looks.
fn purge(s: &mut KeyState, now: u64) {
    s.holds.retain(|h| h.expires_ms > now);
    s.queue.retain(|w| w.expires_ms > now);
}

/// Tries to grant `req` on the key named `name` at the store's time `now_us` (µs).
pub(crate) fn acquire(s: &mut KeyState, name: &str, req: &Request, now_us: u64) -> Result<Attempt> {
    let now = now_us / 1000;
    purge(s, now);
    if let Mode::Permits { limit, .. } = req.mode {
        super::check_size(name, s.held_size(), limit)?;
    }
    let until = now.saturating_add(req.lease_ms);
    if let Some(h) = s.holds.iter_mut().find(|h| h.holder == req.holder) {
        // Re-entry: same holder id, same token, lease refreshed.
        if h.mode != req.mode.hold_mode() {
            return Err(Error::invalid_argument(format!("holder already holds this key in {} mode", h.mode.as_str())));
        }
        h.count = h.count.checked_add(1).ok_or_else(|| Error::invalid_argument("hold count overflow"))?;
        h.expires_ms = h.expires_ms.max(until);
        return Ok(Attempt::Granted { token: h.token, count: h.count, fresh: false });
    }
    let free = match &req.mode {
        Mode::Exclusive => s.holds.is_empty(),
        Mode::Fair => s.holds.is_empty() && s.queue.first().is_none_or(|w| w.holder == req.holder),
        Mode::Read { writer } => {
            let own_writer = s.holds.iter().any(|h| &h.holder == writer);
            own_writer
                || (s.holds.iter().all(|h| h.mode == HoldMode::Read)
                    && !s.queue.iter().any(|w| w.mode == HoldMode::Write))
        }
        Mode::Write => {
            if s.holds.iter().any(|h| h.holder == read_holder_of(&req.holder)) {
                return Err(Error::invalid_argument(
                    "cannot upgrade a read hold to a write hold (it would wait on itself); release the read lock first",
                ));
            }
            s.holds.is_empty()
                && s.queue.iter().find(|w| w.mode == HoldMode::Write).is_none_or(|w| w.holder == req.holder)
        }
        Mode::Permits { count, limit } => {
            let used: u64 = s.holds.iter().map(|h| u64::from(h.count)).sum();
            used + u64::from(*count) <= u64::from(*limit)
        }
    };
    if free {
        s.queue.retain(|w| w.holder != req.holder);
        s.fence = super::next_token(s.fence, now_us);
        let count = match req.mode {
            Mode::Permits { count, limit } => {
                s.size = Some(limit);
                count
            }
            _ => 1,
        };
        s.holds.push(Hold {
            holder: req.holder.clone(),
            mode: req.mode.hold_mode(),
            count,
            token: s.fence,
            expires_ms: until,
            value: req.value.clone(),
        });
        return Ok(Attempt::Granted { token: s.fence, count, fresh: true });
    }
    if req.enqueue && matches!(req.mode, Mode::Fair | Mode::Write) {
        let expires_ms = now.saturating_add(req.queue_ttl_ms);
        match s.queue.iter_mut().find(|w| w.holder == req.holder) {
            Some(w) => w.expires_ms = expires_ms,
            None => s.queue.push(Waiter { holder: req.holder.clone(), mode: req.mode.hold_mode(), expires_ms }),
        }
    }
    let retry_ms = s.holds.iter().map(|h| h.expires_ms - now).min();
    Ok(Attempt::Busy { retry_ms })
}

/// The read-side holder id that pairs with a writer id (`…:write`, Redisson's suffix).
pub(crate) fn read_holder_of(writer: &str) -> &str {
    writer.strip_suffix(":write").unwrap_or(writer)
}

/// Extends `holder`'s lease to `now + lease_ms`; false when it holds nothing.
pub(crate) fn renew(s: &mut KeyState, holder: &str, lease_ms: u64, now_us: u64) -> bool {
    let now = now_us / 1000;
    purge(s, now);
    match s.holds.iter_mut().find(|h| h.holder == holder) {
        Some(h) => {
            h.expires_ms = now.saturating_add(lease_ms);
            true
        }
        None => false,
    }
}

/// Gives back `count` of `holder`'s holds (`u32::MAX`: all of them).
pub(crate) fn release(s: &mut KeyState, holder: &str, count: u32, now_us: u64) -> Result<Released> {
    purge(s, now_us / 1000);
    let Some(i) = s.holds.iter().position(|h| h.holder == holder) else {
        return Ok(Released::NotHeld);
    };
    let h = &mut s.holds[i];
    if count != u32::MAX && count > h.count {
        return Err(Error::invalid_argument(format!("cannot release {count} permits: this holder holds {}", h.count)));
    }
    h.count = if count == u32::MAX { 0 } else { h.count - count };
    if h.count == 0 {
        s.holds.remove(i);
        Ok(Released::Freed)
    } else {
        Ok(Released::StillHeld(h.count))
    }
}

/// Sets the value `holder`'s live hold proclaims (an election's leader); false when it
/// holds nothing.
pub(crate) fn proclaim(s: &mut KeyState, holder: &str, value: &str, now_us: u64) -> bool {
    purge(s, now_us / 1000);
    match s.holds.iter_mut().find(|h| h.holder == holder) {
        Some(h) => {
            h.value = Some(value.to_owned());
            true
        }
        None => false,
    }
}

/// Removes `holder`'s place in the queue (a waiter that gave up).
pub(crate) fn leave_queue(s: &mut KeyState, holder: &str) -> bool {
    let before = s.queue.len();
    s.queue.retain(|w| w.holder != holder);
    s.queue.len() != before
}

/// The live part of the state at `now_us` (expired entries left out, nothing written).
pub(crate) fn inspect(s: &KeyState, now_us: u64) -> KeyState {
    let mut view = s.clone();
    purge(&mut view, now_us / 1000);
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(holder: &str, mode: Mode) -> Request {
        Request {
            holder: holder.into(),
            mode,
            lease_ms: 1000,
            enqueue: true,
            queue_ttl_ms: 500,
            watchdog: true,
            shared: false,
            token_floor: None,
            value: None,
        }
    }
    /// The store's clock in µs at `ms`.
    fn at(ms: u64) -> u64 {
        ms * 1000
    }
    fn granted(a: Attempt) -> u64 {
        match a {
            Attempt::Granted { token, .. } => token,
            other => panic!("expected a grant, got {other:?}"),
        }
    }

    #[test]
    fn exclusive_reentry_and_expiry() {
        let mut s = KeyState::default();
        let t1 = granted(acquire(&mut s, "k", &req("a", Mode::Exclusive), at(0)).unwrap());
        assert_eq!(
            acquire(&mut s, "k", &req("a", Mode::Exclusive), at(10)).unwrap(),
            Attempt::Granted { token: t1, count: 2, fresh: false }
        );
        assert_eq!(
            acquire(&mut s, "k", &req("b", Mode::Exclusive), at(20)).unwrap(),
            Attempt::Busy { retry_ms: Some(990) }
        );
        assert_eq!(release(&mut s, "b", 1, at(30)).unwrap(), Released::NotHeld);
        assert_eq!(release(&mut s, "a", 1, at(30)).unwrap(), Released::StillHeld(1));
        // a's lease ends at 1010: b gets a larger token, a's release finds nothing.
        let t2 = granted(acquire(&mut s, "k", &req("b", Mode::Exclusive), at(1010)).unwrap());
        assert!(t2 > t1);
        assert_eq!(release(&mut s, "a", 1, at(1020)).unwrap(), Released::NotHeld);
        assert!(!renew(&mut s, "a", 1000, at(1020)));
        assert!(renew(&mut s, "b", 1000, at(1020)));
    }

    #[test]
    fn fair_queue_order_and_dead_waiters() {
        let mut s = KeyState::default();
        granted(acquire(&mut s, "k", &req("a", Mode::Fair), at(0)).unwrap());
        for w in ["b", "c"] {
            assert!(matches!(acquire(&mut s, "k", &req(w, Mode::Fair), at(1)).unwrap(), Attempt::Busy { .. }));
        }
        release(&mut s, "a", 1, at(2)).unwrap();
        // c is not the head: b is.
        assert!(matches!(acquire(&mut s, "k", &req("c", Mode::Fair), at(3)).unwrap(), Attempt::Busy { .. }));
        // b never comes back; its place expires (queue ttl 500) and c gets the lock.
        assert!(matches!(acquire(&mut s, "k", &req("c", Mode::Fair), at(400)).unwrap(), Attempt::Busy { .. }));
        granted(acquire(&mut s, "k", &req("c", Mode::Fair), at(600)).unwrap());
    }

    #[test]
    fn readers_writers() {
        let mut s = KeyState::default();
        let rd = |h: &str| req(h, Mode::Read { writer: format!("{h}:write") });
        granted(acquire(&mut s, "k", &rd("r1"), at(0)).unwrap());
        granted(acquire(&mut s, "k", &rd("r2"), at(0)).unwrap());
        assert!(matches!(acquire(&mut s, "k", &req("w:write", Mode::Write), at(1)).unwrap(), Attempt::Busy { .. }));
        // A writer is waiting: new readers queue behind it.
        assert!(matches!(acquire(&mut s, "k", &rd("r3"), at(2)).unwrap(), Attempt::Busy { .. }));
        release(&mut s, "r1", 1, at(3)).unwrap();
        release(&mut s, "r2", 1, at(3)).unwrap();
        granted(acquire(&mut s, "k", &req("w:write", Mode::Write), at(4)).unwrap());
        // Downgrade: the writer's own read side may enter.
        granted(acquire(&mut s, "k", &rd("w"), at(5)).unwrap());
        assert!(matches!(acquire(&mut s, "k", &rd("r3"), at(6)).unwrap(), Attempt::Busy { .. }));
        release(&mut s, "w:write", 1, at(7)).unwrap();
        granted(acquire(&mut s, "k", &rd("r3"), at(8)).unwrap());
        let e = acquire(&mut s, "k", &req("r3:write", Mode::Write), at(9)).unwrap_err();
        assert!(e.message().contains("upgrade"));
    }

    #[test]
    fn permits() {
        let mut s = KeyState::default();
        let p = |h: &str, count| req(h, Mode::Permits { count, limit: 3 });
        granted(acquire(&mut s, "k", &p("a", 2), at(0)).unwrap());
        assert!(matches!(acquire(&mut s, "k", &p("b", 2), at(0)).unwrap(), Attempt::Busy { .. }));
        granted(acquire(&mut s, "k", &p("c", 1), at(0)).unwrap());
        assert!(release(&mut s, "a", 3, at(1)).is_err());
        assert_eq!(release(&mut s, "a", 1, at(1)).unwrap(), Released::StillHeld(1));
        // a and c crash: their permits come back when the leases end.
        granted(acquire(&mut s, "k", &p("b", 3), at(1001)).unwrap());
    }

    #[test]
    fn free_state_is_forgettable_once_the_clock_passed_its_token() {
        let mut s = KeyState::default();
        let t = granted(acquire(&mut s, "k", &req("a", Mode::Exclusive), at(5)).unwrap());
        assert_eq!(t, at(5), "the first token is the clock in µs");
        assert!(!s.forgettable(at(6)), "held");
        release(&mut s, "a", 1, at(5)).unwrap();
        // Released within the µs of its grant: the next grant could get the same token.
        assert!(!s.forgettable(t));
        assert!(s.forgettable(t + 1));
        // A forgotten state starts again from the clock, above the token.
        let mut fresh = KeyState::default();
        assert!(granted(acquire(&mut fresh, "k", &req("b", Mode::Exclusive), t + 1).unwrap()) > t);
        // An expired hold or queue place counts as gone; a latch count does not.
        granted(acquire(&mut s, "k", &req("a", Mode::Exclusive), at(10)).unwrap());
        assert!(!s.forgettable(at(1009)) && s.forgettable(at(1010)));
        s.count = 1;
        assert!(!s.forgettable(at(2000)));
    }

    #[test]
    fn size_is_state() {
        let mut s = KeyState::default();
        let p = |h: &str, limit| req(h, Mode::Permits { count: 1, limit });
        granted(acquire(&mut s, "parking", &p("a", 3), at(0)).unwrap());
        assert_eq!(s.held_size(), Some(3));
        let e = acquire(&mut s, "parking", &p("b", 5), at(0)).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument);
        assert!(e.message().contains("has 3 permits") && e.message().contains("asked for 5"), "{e}");
        // Re-entry by the holder is refused too, and a refusal changes nothing.
        assert!(acquire(&mut s, "parking", &p("a", 5), at(0)).is_err());
        assert_eq!(release(&mut s, "a", 1, at(1)).unwrap(), Released::Freed);
        assert_eq!(s.held_size(), None);
        granted(acquire(&mut s, "parking", &p("b", 5), at(2)).unwrap());
        assert_eq!(s.held_size(), Some(5));
        // A lease that ended frees the size as well.
        granted(acquire(&mut s, "parking", &p("c", 3), at(2000)).unwrap());
        // A row written before the size was recorded reads with none.
        let old: KeyState = serde_json::from_str(r#"{"fence":1}"#).unwrap();
        assert_eq!(old.size, None);
    }
}
