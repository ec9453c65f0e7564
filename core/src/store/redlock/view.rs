//! What `inspect` shows of a key on Redlock: the nodes' views merged by quorum.

use crate::state::{Hold, KeyState, Waiter};

/// Merges the nodes' views of a key: the holds and waiters a quorum of nodes agrees on
/// (each with the least lease left and the hold count a quorum reached), and the largest
/// counter a quorum has reached. Times
/// are made relative to each node's own clock (the result's `now` is 0).
///
/// Why not the largest counter: a node counts up in a round that is then undone, or
/// answers a grant after the quorum did, so it may stand above the last token granted;
/// a grant leaves its token on a quorum and fewer than a quorum of nodes (those outside
/// its granting quorum) can stand above it, so the quorum-th largest is that token. A
/// hold's token is merged the same way: a node that granted after the quorum records its
/// own counter until the holder's write-back reaches it, which another client's read may
/// precede.
pub(super) fn merge(views: Vec<(KeyState, u64)>, need: usize) -> KeyState {
    // Per holder: its hold, and each node's token and count.
    let mut holds: Vec<(Hold, Vec<u64>, Vec<u64>)> = Vec::new();
    let mut queue: Vec<(Waiter, usize)> = Vec::new();
    let fence = quorum_th(views.iter().map(|(s, _)| s.fence).collect(), need);
    // The semaphore size most nodes record (every node's acquire checks its own).
    let mut sizes: Vec<u32> = views.iter().filter_map(|(s, _)| s.size).collect();
    sizes.sort_unstable();
    let size = sizes.iter().copied().max_by_key(|s| sizes.iter().filter(|x| *x == s).count());
    for (s, now) in views {
        for mut h in s.holds {
            h.expires_ms = h.expires_ms.saturating_sub(now);
            match holds.iter_mut().find(|(x, _, _)| x.holder == h.holder) {
                Some((x, tokens, counts)) => {
                    tokens.push(h.token);
                    counts.push(u64::from(h.count));
                    x.expires_ms = x.expires_ms.min(h.expires_ms);
                }
                None => {
                    let (token, count) = (h.token, u64::from(h.count));
                    holds.push((h, vec![token], vec![count]));
                }
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
            .filter(|(_, tokens, _)| tokens.len() >= need)
            .map(|(h, tokens, counts)| {
                // The count a quorum reached, as the token: a node whose re-entry step was
                // still on its way (or was dropped past the node timeout) counts fewer.
                let count = u32::try_from(quorum_th(counts, need)).unwrap_or(h.count);
                Hold { token: quorum_th(tokens, need), count, ..h }
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
        Hold { holder: holder.into(), mode: HoldMode::Exclusive, count: 1, token, expires_ms }
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
