//! What `inspect` shows of a key on Redlock: the nodes' views merged by quorum.

use crate::state::{Hold, KeyState, Waiter};

/// Merges the nodes' views of a key: the holds and waiters a quorum of nodes agrees on
/// (each with the lease left and the hold count a quorum reached), and the largest counter
/// a quorum has reached. Times are made relative to each node's own clock (the result's
/// `now` is 0).
///
/// Why not the largest counter: a node counts up in a round that is then undone, or
/// answers a grant after the quorum did, so it may stand above the last token granted;
/// a grant leaves its token on a quorum and fewer than a quorum of nodes (those outside
/// its granting quorum) can stand above it, so the quorum-th largest is that token. A
/// hold's token is merged the same way: a node that granted after the quorum records its
/// own counter until the holder's write-back reaches it, which another client's read may
/// precede. A hold's lease left is the time until fewer than a quorum hold it (the
/// quorum-th longest): a lease extended on a quorum only (`update_lease` from a client
/// whose steps to the other nodes are late) lasts as long as the quorum does, and the
/// least lease left would make its holder think it lost.
pub(super) fn merge(views: Vec<(KeyState, u64)>, need: usize) -> KeyState {
    // Per holder: its hold, and each node's token, count and lease left.
    let mut holds: Vec<(Hold, [Vec<u64>; 3])> = Vec::new();
    let mut queue: Vec<(Waiter, usize)> = Vec::new();
    let fence = quorum_th(views.iter().map(|(s, _)| s.fence).collect(), need);
    // The semaphore size most nodes record (every node's acquire checks its own).
    let mut sizes: Vec<u32> = views.iter().filter_map(|(s, _)| s.size).collect();
    sizes.sort_unstable();
    let size = sizes.iter().copied().max_by_key(|s| sizes.iter().filter(|x| *x == s).count());
    for (s, now) in views {
        for mut h in s.holds {
            h.expires_ms = h.expires_ms.saturating_sub(now);
            let seen = [h.token, u64::from(h.count), h.expires_ms];
            match holds.iter_mut().find(|(x, _)| x.holder == h.holder) {
                Some((_, per_node)) => per_node.iter_mut().zip(seen).for_each(|(v, s)| v.push(s)),
                None => holds.push((h, seen.map(|s| vec![s]))),
            }
        }
        for mut w in s.queue {
            w.expires_ms = w.expires_ms.saturating_sub(now);
            match queue.iter_mut().find(|(x, _)| x.holder == w.holder) {
                Some((x, seen)) => {
                    *seen += 1;
                    x.expires_ms = x.expires_ms.min(w.expires_ms);
                }
                None => queue.push((w, 1)),
            }
        }
    }
    KeyState {
        fence,
        holds: holds
            .into_iter()
            .filter(|(_, [tokens, ..])| tokens.len() >= need)
            .map(|(h, [tokens, counts, expires])| {
                // The count a quorum reached, as the token: a node whose re-entry step was
                // still on its way (or was dropped past the node timeout) counts fewer.
                let count = u32::try_from(quorum_th(counts, need)).unwrap_or(h.count);
                Hold { token: quorum_th(tokens, need), count, expires_ms: quorum_th(expires, need), ..h }
            })
            .collect(),
        queue: queue.into_iter().filter(|(_, seen)| *seen >= need).map(|(w, _)| w).collect(),
        count: 0,
        size,
    }
}

/// The largest value at least `need` of `values` reach (the smallest of them all when
/// fewer answered).
fn quorum_th(mut values: Vec<u64>, need: usize) -> u64 {
    values.sort_unstable_by(|a, b| b.cmp(a));
    values.get(need.saturating_sub(1)).or(values.last()).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::HoldMode;

    fn hold(holder: &str, token: u64, expires_ms: u64) -> Hold {
        Hold { holder: holder.into(), mode: HoldMode::Exclusive, count: 1, token, expires_ms, value: None }
    }

    #[test]
    fn merge_keeps_what_a_quorum_agrees_on() {
        let views = vec![
            (KeyState { fence: 4, holds: vec![hold("a", 4, 1_500)], ..KeyState::default() }, 1_000),
            (KeyState { fence: 9, holds: vec![hold("a", 4, 10_400)], ..KeyState::default() }, 10_000),
            (KeyState { fence: 1, holds: vec![hold("b", 1, 900)], ..KeyState::default() }, 0),
        ];
        let s = merge(views, 2);
        // 9 on one node alone (a round undone there): 4 is what a quorum reached.
        assert_eq!(s.fence, 4);
        assert_eq!(s.holds, vec![hold("a", 4, 400)]);
    }

    #[test]
    fn a_hold_count_is_the_one_a_quorum_reached() {
        // Re-entered (count 2) on four nodes; the fifth never got the re-entry's step.
        let views = (0..5).map(|i| {
            let count = if i == 4 { 1 } else { 2 };
            (KeyState { fence: 7, holds: vec![Hold { count, ..hold("a", 7, 900) }], ..KeyState::default() }, 0)
        });
        assert_eq!(merge(views.collect(), 3).holds[0].count, 2);
    }

    #[test]
    fn a_lease_lasts_while_a_quorum_holds_it() {
        // Extended to 2 100 ms on three nodes of five; the other two were not reached yet.
        let views = (0..5).map(|i| {
            let left = if i < 3 { 2_100 } else { 300 };
            (KeyState { fence: 7, holds: vec![hold("a", 7, left)], ..KeyState::default() }, 0)
        });
        assert_eq!(merge(views.collect(), 3).holds[0].expires_ms, 2_100);
        // Only two nodes of five still hold it long: the quorum ends with the third.
        let views = (0..5).map(|i| {
            let left = [2_100, 2_100, 900, 300, 300][i];
            (KeyState { fence: 7, holds: vec![hold("a", 7, left)], ..KeyState::default() }, 0)
        });
        assert_eq!(merge(views.collect(), 3).holds[0].expires_ms, 900);
    }

    #[test]
    fn a_late_granting_node_does_not_raise_the_holds_token() {
        // The quorum granted 7 (written back to the first two); the third node granted
        // later with its own counter, before the write-back reached it.
        let views = (0..3).map(|i| {
            (KeyState { fence: [7, 7, 12][i], holds: vec![hold("a", [7, 7, 12][i], 900)], ..KeyState::default() }, 0)
        });
        let s = merge(views.collect(), 2);
        assert_eq!((s.fence, s.holds), (7, vec![hold("a", 7, 900)]));
    }
}
