//! An acquire by quorum: the rounds, the fencing token of a grant and its write-back,
//! and the undo of a round that did not make it.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use rand::Rng;
use tokio::time::Instant;

use super::config::BEHIND_TIMEOUT;
use super::fanout::Late;
use super::gate::gate;
use super::node::Node;
use super::quorum::{self, Tally, Verdict};
use super::{LIMITS_KEPT, Redlock};
use crate::error::{Error, ErrorKind, Result};
use crate::key::Key;
use crate::state::{Attempt, Mode, Request};
use crate::store::Store;
use crate::sync::LockExt;

impl Redlock {
    /// One attempt at `req` on `key`: rounds until a quorum grants in time, the key is
    /// held elsewhere on too many nodes, or the retries run out.
    pub(super) async fn acquire_by_quorum(&self, key: &Key, req: &Request) -> Result<Attempt> {
        let limit = match req.mode {
            Mode::Fair => {
                return Err(Error::unsupported(format!(
                    "{}: fair locks are not available on redlock:// (each node would keep its own queue, in its own \
                     order); use a plain lock here, or a fair lock on redis://",
                    self.config.store
                )));
            }
            Mode::Permits { limit, .. } => {
                let mut limits = self.limits.locked();
                if limits.len() >= LIMITS_KEPT && !limits.contains_key(key) {
                    limits.clear();
                }
                limits.insert(key.clone(), limit);
                limit
            }
            _ => 1,
        };
        let n = self.nodes.len();
        let need = quorum::quorum(n, limit);
        let ttl = Duration::from_millis(req.lease_ms);
        let drift = quorum::drift(ttl, self.config.drift_factor);
        // The holder's turn first, always in this order (a release takes only that one).
        let mine = gate(&self.config.store, key, Some(&req.holder));
        let _my_turn = mine.lock().await;
        let gate = gate(&self.config.store, key, None);
        let _turn = gate.lock().await;
        let mut round = 0;
        loop {
            let start = Instant::now();
            let req = &Request { token_floor: Some(token_floor()), ..req.clone() };
            let step = |n: Arc<Node>| {
                let (key, req) = (key.clone(), req.clone());
                async move { n.redis.acquire_counted(&key, &req).await }
            };
            // A hold others may give back waits for every node: their release comes on
            // connections of their own, which the steps still answering on this client's
            // would not order (a permit released by id there, then granted by the late
            // step, would stay held on that node).
            let granted_by = |a: &[&Result<(Attempt, u64)>]| {
                !req.shared && a.iter().filter(|a| matches!(a, Ok((Attempt::Granted { .. }, _)))).count() >= need
            };
            let (answers, late) = self.each_until(key, self.per_node(ttl), false, step, granted_by).await;
            let reentry = answers.iter().any(|a| matches!(a, Ok((Attempt::Granted { fresh: false, .. }, _))));
            let mut tally = Tally { nodes: n, granted: 0, busy: 0 };
            let refusals = refused(&answers);
            let (mut retry_ms, mut first_err) = (None::<u64>, None::<Error>);
            for a in &answers {
                match a {
                    Ok((Attempt::Granted { .. }, _)) => tally.granted += 1,
                    Ok((Attempt::Busy { retry_ms: r }, _)) => {
                        tally.busy += 1;
                        retry_ms = match (retry_ms, r) {
                            (Some(a), Some(b)) => Some(a.min(*b)),
                            (a, b) => a.or(*b),
                        };
                    }
                    // A refusal from a majority is the name's state (a name used by another
                    // kind of primitive, an upgrade, a bad count, a semaphore of another
                    // size): no quorum changes it. From a minority it is a node behind the
                    // others (a release still on its way there), which refuses like a busy
                    // node until it catches up.
                    Err(e) if e.kind() != ErrorKind::Connection => {
                        if refusals >= quorum::quorum(n, 1) {
                            let e = e.clone();
                            self.undo(key, &req.holder, &answers, reentry).await;
                            return Err(e);
                        }
                        tally.busy += 1;
                    }
                    Err(e) => {
                        first_err.get_or_insert_with(|| e.clone());
                    }
                }
            }
            let mut valid = quorum::validity(ttl, start.elapsed(), drift).is_some();
            let verdict = quorum::verdict(tally, need, valid);
            if verdict == Verdict::Grant {
                let (token, count, fresh) = granted(&answers);
                if self.write_back(key, req, &answers, late, token).await >= need {
                    valid = quorum::validity(ttl, start.elapsed(), drift).is_some();
                    if valid {
                        return Ok(Attempt::Granted { token, count, fresh });
                    }
                }
            }
            self.undo(key, &req.holder, &answers, reentry).await;
            round += 1;
            match verdict {
                Verdict::Busy => return Ok(Attempt::Busy { retry_ms }),
                _ if round <= self.config.retry_count => self.pause().await,
                Verdict::Unreachable => {
                    return Err(self.no_quorum("acquire", tally.granted + tally.busy, need, first_err));
                }
                Verdict::Grant | Verdict::Retry => return Ok(Attempt::Busy { retry_ms }),
            }
        }
    }

    /// Gives back what one failed round took: one re-entry on the nodes that counted one
    /// more, or the whole fresh hold on the nodes that granted and on those whose answer
    /// never came (it may have landed).
    async fn undo(&self, key: &Key, holder: &str, answers: &[Result<(Attempt, u64)>], reentry: bool) {
        let limit = self.step_limit();
        let count = if reentry { 1 } else { u32::MAX };
        join_all(self.nodes.iter().zip(answers).filter_map(|(n, a)| {
            let took = matches!(a, Ok((Attempt::Granted { .. }, _))) || (!reentry && a.is_err());
            took.then(|| {
                let (node, k, holder) = (n.clone(), key.clone(), holder.to_owned());
                n.step_landing(key, limit, async move { node.redis.release(&k, &holder, count).await })
            })
        }))
        .await;
    }

    /// Writes `token` back to the granting nodes whose counter is below it; how many
    /// granting nodes hold it afterwards. The refusing nodes below it, and the nodes whose
    /// answer was not waited for (`each_until`, after that answer), get it in the
    /// background: the token then sits on every node that answered, and any later quorum
    /// meets it even when nodes restart empty (a node that did not grant only has its
    /// counter raised; the script leaves holds it does not know alone).
    async fn write_back(
        &self,
        key: &Key,
        req: &Request,
        answers: &[Result<(Attempt, u64)>],
        mut late: Late<(Attempt, u64)>,
        token: u64,
    ) -> usize {
        let lease = Duration::from_millis(req.lease_ms);
        let limit = self.per_node(lease);
        // In the background a node gets more than one step's limit (up to the lease, at
        // most 5 s): a late answer on a loaded host must still leave the token there. A
        // later step on that node waits for it within its own limit.
        let behind_limit = limit.max(lease.min(BEHIND_TIMEOUT));
        let mut at_token = 0;
        let mut raise = Vec::new();
        for ((n, a), late) in self.nodes.iter().zip(answers).zip(late.iter_mut()) {
            let late = match a {
                Ok((Attempt::Granted { .. }, t)) if *t >= token => {
                    at_token += 1;
                    continue;
                }
                Ok((Attempt::Granted { .. }, _)) => {
                    raise.push(tokio::time::timeout(limit, n.redis.raise_fence(key, &req.holder, token)));
                    continue;
                }
                Ok((Attempt::Busy { .. }, counter)) if *counter >= token => continue,
                Ok((Attempt::Busy { .. }, _)) => None,
                Err(e) if e.kind() == ErrorKind::Connection => late.take(),
                Err(_) => continue,
            };
            // A late answer that already meets the token (the usual case: the nodes agree
            // on the counter) needs nothing more.
            let (n2, key2, holder) = (n.clone(), key.clone(), req.holder.clone());
            n.step_behind(key, behind_limit, async move {
                let known = match late {
                    Some(rx) => rx.await.ok().and_then(Result::ok),
                    None => None,
                };
                match known {
                    Some((Attempt::Granted { .. }, t)) if t == token => Ok(()),
                    Some((Attempt::Busy { .. }, counter)) if counter >= token => Ok(()),
                    _ => n2.redis.raise_fence(&key2, &holder, token).await,
                }
            });
        }
        at_token + join_all(raise).await.into_iter().filter(|r| matches!(r, Ok(Ok(())))).count()
    }

    /// A random pause before the next round: `retry_delay` plus up to `retry_jitter`, so
    /// that clients that split the nodes between them do not collide again.
    async fn pause(&self) {
        let jitter = u64::try_from(self.config.retry_jitter.as_millis()).unwrap_or(u64::MAX);
        let extra = Duration::from_millis(rand::rng().random_range(0..=jitter));
        tokio::time::sleep(self.config.retry_delay + extra).await;
    }
}

/// How many nodes refused the round with an error of the name's state (not `Connection`).
fn refused(answers: &[Result<(Attempt, u64)>]) -> usize {
    answers.iter().filter(|a| matches!(a, Err(e) if e.kind() != ErrorKind::Connection)).count()
}

/// The fencing token and hold count of a granting round: a re-entry keeps the hold's
/// token; a fresh grant gets one above every counter.
///
/// The hold's token is the one most of the re-entry's nodes recorded, the smaller on a
/// tie: the grant left its token on a quorum before it returned, so every re-entry's quorum
/// meets it; a node whose answer came after that quorum granted later, with its own larger
/// token (`max(counter + 1, TIME)`), until the grant's token is written back to it in the
/// background — which another client's re-entry (an owner shared with it) does not wait
/// for; and a node whose write-back failed keeps its own smaller one.
fn granted(answers: &[Result<(Attempt, u64)>]) -> (u64, u32, bool) {
    let mut held = Vec::new();
    let (mut tokens, mut busy, mut count, mut held_count) = (Vec::new(), Vec::new(), 1, 0);
    for a in answers.iter().flatten() {
        match a {
            (Attempt::Granted { token, count: c, fresh: false }, _) => {
                held.push(*token);
                held_count = held_count.max(*c);
            }
            (Attempt::Granted { token, count: c, fresh: true }, _) => {
                tokens.push(*token);
                count = *c;
            }
            (Attempt::Busy { .. }, counter) => busy.push(*counter),
        }
    }
    if held.is_empty() {
        return (quorum::fence(tokens, busy), count, true);
    }
    let votes = |t: &u64| held.iter().filter(|x| *x == t).count();
    let token = held.iter().copied().max_by(|a, b| votes(a).cmp(&votes(b)).then(b.cmp(a))).unwrap_or(0);
    (token, held_count, false)
}

/// How far ahead of this client's clock a round's token floor is: more than the nodes'
/// clocks differ from it (then they agree), little enough that a free name's counter,
/// left above a node's clock, expires soon (`forget.lua`).
const FLOOR_AHEAD_US: u64 = 250_000;

/// The token floor of a round (`Request::token_floor`): this client's clock in µs plus
/// [`FLOOR_AHEAD_US`]. Each node's counter starts from its own clock (`TIME`, in µs), so
/// five nodes would answer five tokens and four would need the highest written back (a
/// third request a cycle); a floor ahead of every node's clock makes them answer the same
/// one. A node whose counter is above it (a client with a faster clock took the name)
/// answers above it, and is written back to as before.
fn token_floor() -> u64 {
    let now = crate::rt::SystemTime::now().duration_since(crate::rt::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(now.as_micros()).unwrap_or(u64::MAX / 2).saturating_add(FLOOR_AHEAD_US)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_grant_is_above_every_counter_and_a_reentry_keeps_its_token() {
        let g = |token, fresh| Ok((Attempt::Granted { token, count: 1, fresh }, token));
        let busy = |c| Ok((Attempt::Busy { retry_ms: None }, c));
        let down = || Err(Error::connection("down"));
        assert_eq!(granted(&[g(3, true), g(1, true), g(3, true), busy(5), down()]), (6, 1, true));
        assert_eq!(granted(&[g(4, false), g(4, false), g(1, true)]), (4, 1, false));
        // A node that granted after the quorum, not yet written back, or whose write-back
        // failed: the quorum's token.
        assert_eq!(granted(&[g(9, false), g(4, false), g(4, false)]), (4, 1, false));
        assert_eq!(granted(&[g(3, false), g(6, false), g(6, false)]), (6, 1, false));
        assert_eq!(granted(&[g(9, false), g(10, false), g(4, false)]), (4, 1, false));
    }
}
