//! The Redlock arithmetic, free of I/O: how many nodes make a grant, how long a grant
//! stays valid, what one round of answers means, and the fencing token of a grant.

use std::time::Duration;

/// How many of `n` nodes must grant a primitive that admits `limit` holders at once.
///
/// A lock (`limit` 1) needs a majority, `n/2 + 1`: two majorities share a node, and a
/// node grants one holder. A semaphore of `limit` permits needs more: each grant takes a
/// place on `q` nodes and a node has `limit` places, so at most `n·limit/q` grants can
/// coexist; keeping that below `limit + 1` needs `q > n·limit/(limit+1)`. (With a
/// majority, 5 nodes and 2 permits could admit 3 holders.) Never more than `n`.
pub(crate) fn quorum(n: usize, limit: u32) -> usize {
    let (n64, l) = (n as u64, u64::from(limit.max(1)));
    let q = n64 * l / (l + 1) + 1;
    usize::try_from(q).unwrap_or(n).min(n)
}

/// The clock drift allowed for a lease of `ttl`: `ttl·factor + 2 ms` (the Redlock paper's
/// allowance for the nodes' clocks running at different rates, plus their resolution).
pub(crate) fn drift(ttl: Duration, factor: f64) -> Duration {
    ttl.mul_f64(factor) + Duration::from_millis(2)
}

/// What is left of a lease of `ttl` taken in `elapsed`: `ttl − elapsed − drift`, `None`
/// when nothing is (a grant that took that long is no grant).
pub(crate) fn validity(ttl: Duration, elapsed: Duration, drift: Duration) -> Option<Duration> {
    ttl.checked_sub(elapsed + drift).filter(|v| !v.is_zero())
}

/// How one round of an acquire went, node by node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) nodes: usize,
    pub(crate) granted: usize,
    pub(crate) busy: usize,
}

/// What a round of answers means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A quorum granted in time.
    Grant,
    /// Held elsewhere on so many nodes that no quorum is possible: wait for a release.
    Busy,
    /// Too few nodes answered at all to make a quorum (down, or slower than the node
    /// timeout).
    Unreachable,
    /// A split (several clients took some nodes each) or a grant that came too late:
    /// give everything back and try again after a random delay.
    Retry,
}

/// The meaning of `t` for a quorum of `need`, `valid` telling whether time was left.
pub(crate) fn verdict(t: Tally, need: usize, valid: bool) -> Verdict {
    if t.granted >= need && valid {
        Verdict::Grant
    } else if t.busy > t.nodes - need {
        Verdict::Busy
    } else if t.granted + t.busy < need {
        Verdict::Unreachable
    } else {
        Verdict::Retry
    }
}

/// The fencing token of a fresh grant: above every token any answering node has seen.
/// `granted` are the counters the granting nodes moved to (each node's own counter + 1),
/// `busy` the counters of the nodes that refused.
///
/// Why it only grows: every grant leaves its token on a quorum (the granting nodes hold
/// it, or get it written back), and a later grant hears from a quorum; two quorums share
/// a node, whose counter is at least the earlier token, so the later token is larger.
/// A node restarted empty forgets its counter, but only it: the token survives as long
/// as one node of the shared part kept its data. With every node answering (the usual
/// case) the token sits on all `n` nodes and any `n − quorum` of them may restart empty.
pub(crate) fn fence(granted: impl IntoIterator<Item = u64>, busy: impl IntoIterator<Item = u64>) -> u64 {
    let g = granted.into_iter().max().unwrap_or(0);
    let b = busy.into_iter().max().map_or(0, |c| c.saturating_add(1));
    g.max(b).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_sizes() {
        let majority: Vec<usize> = (1..=7).map(|n| quorum(n, 1)).collect();
        assert_eq!(majority, [1, 2, 2, 3, 3, 4, 4]);
        // Semaphores need more as permits grow, and never more than every node.
        assert_eq!((quorum(5, 2), quorum(5, 3), quorum(5, 4), quorum(5, 1000)), (4, 4, 5, 5));
        assert_eq!((quorum(3, 2), quorum(1, 9), quorum(5, 0)), (3, 1, 3));
    }

    /// The counting argument behind `quorum`: with `q` places per grant and `limit` places
    /// per node, `n` nodes never fit `limit + 1` grants.
    #[test]
    fn semaphore_quorum_never_admits_one_more() {
        for n in 1..=9usize {
            for limit in 1..=12u32 {
                let q = quorum(n, limit);
                assert!(q * (limit as usize + 1) > n * limit as usize, "n {n} limit {limit} q {q}");
                // And it is the least such quorum.
                if q > 1 {
                    assert!((q - 1) * (limit as usize + 1) <= n * limit as usize, "n {n} limit {limit}");
                }
            }
        }
    }

    #[test]
    fn validity_is_ttl_minus_elapsed_minus_drift() {
        let ttl = Duration::from_secs(10);
        let d = drift(ttl, 0.01);
        assert_eq!(d, Duration::from_millis(102));
        assert_eq!(validity(ttl, Duration::from_millis(898), d), Some(Duration::from_secs(9)));
        assert_eq!(validity(ttl, Duration::from_millis(9898), d), None);
        assert_eq!(validity(ttl, Duration::from_secs(11), d), None);
    }

    #[test]
    fn verdicts() {
        let t = |granted, busy| Tally { nodes: 5, granted, busy };
        assert_eq!(verdict(t(3, 0), 3, true), Verdict::Grant);
        assert_eq!(verdict(t(5, 0), 3, false), Verdict::Retry);
        assert_eq!(verdict(t(0, 5), 3, true), Verdict::Busy);
        assert_eq!(verdict(t(2, 3), 3, true), Verdict::Busy);
        assert_eq!(verdict(t(2, 2), 3, true), Verdict::Retry);
        // Three nodes down: two grants are never a grant.
        assert_eq!(verdict(t(2, 0), 3, true), Verdict::Unreachable);
        assert_eq!(verdict(t(0, 0), 3, true), Verdict::Unreachable);
        assert_eq!(verdict(t(1, 1), 3, true), Verdict::Unreachable);
    }

    #[test]
    fn fence_is_above_everything_seen() {
        assert_eq!(fence([4, 4, 4], []), 4);
        // A node restarted empty grants 1; the others know better.
        assert_eq!(fence([1, 7, 7], []), 7);
        // A refusing node's counter counts too: its last grant may be the latest.
        assert_eq!(fence([3, 3, 3], [9]), 10);
        assert_eq!(fence([], []), 1);
    }
}
