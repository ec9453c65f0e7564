//! The acquire loop: attempt → wait for the store to say something changed → attempt
//! again, until granted, timed out, or dropped.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::rt::Instant;
use rand::Rng;

use super::{Grant, Slot, Turn};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::state::{Attempt, Mode, Request};
use crate::store::Store;

/// How long to wait.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    /// One attempt.
    No,
    /// Until granted, or until the deadline if there is one.
    Until(Option<Instant>),
}

impl Wait {
    pub(crate) fn timeout(d: Duration) -> Result<Wait> {
        let d = crate::duration::validate("timeout", d)?;
        Ok(Wait::Until(Some(Instant::now() + d)))
    }

    /// At most `timeout` when there is one, else until granted.
    pub(crate) fn within(timeout: Option<Duration>) -> Result<Wait> {
        timeout.map_or(Ok(Wait::Until(None)), Wait::timeout)
    }
}

/// Re-checks at least this often even when the store says nothing (a lost notification,
/// an expiry nobody announces), with jitter so waiters do not stampede.
const RECHECK: Duration = Duration::from_secs(1);

/// Takes the slot's grant, waiting as `wait` says.
///
/// # Cancel safety
/// Dropping the future never leaves a hold behind: an attempt still under way is handed to
/// the runtime (`Finish`), which gives back a grant nobody is left to receive, and a queue
/// place is given up on drop.
pub(crate) async fn acquire(slot: &Arc<Slot>, wait: Wait) -> Result<Option<Grant>> {
    slot.spec.ctx.closed_or(acquire_inner(slot, wait).await)
}

async fn acquire_inner(slot: &Arc<Slot>, wait: Wait) -> Result<Option<Grant>> {
    let spec = &slot.spec;
    spec.ctx.check_open()?;
    let queued = matches!(wait, Wait::Until(_))
        && (matches!(spec.mode, Mode::Fair | Mode::Write)
            || (spec.mode == Mode::Exclusive && spec.ctx.store.queues_locks()));
    let req = Request {
        holder: spec.holder.clone(),
        mode: spec.mode.clone(),
        lease_ms: millis(spec.lease.length()),
        enqueue: queued,
        queue_ttl_ms: millis(spec.queue_ttl),
        watchdog: matches!(spec.lease, crate::options::Lease::Watchdog { .. }),
        shared: !spec.own_holder,
        token_floor: None,
        value: spec.value.clone(),
    };
    let mut place = queued.then(|| QueuePlace::new(slot));
    let mut sub: Option<Box<dyn crate::store::Subscription>> = None;
    let first = Instant::now();
    let mut outage = Outage::default();
    loop {
        let started = Instant::now();
        // The turn is kept until the grant is recorded (below, with no await in between),
        // so that no other store call of this slot counts its hold as a stray meanwhile.
        // An attempt is never cut short here: one dropped after its request went out
        // could leave a grant nobody gives back (each store call bounds its own time).
        let (attempt, turn) = match attempt(slot, &req).await {
            Ok(a) => {
                outage.over();
                a
            }
            Err(e) => {
                outage.ride(e, wait).await?;
                sub = None;
                continue;
            }
        };
        let retry = match attempt {
            Attempt::Granted { token, count, fresh } => {
                if let Some(p) = place.as_mut() {
                    p.armed = false;
                }
                let held = slot.on_granted(token, fresh, started);
                crate::observe::acquired(&spec.key, first.elapsed(), token);
                let n = if matches!(spec.mode, Mode::Permits { .. }) { count } else { 1 };
                return Ok(Some(Grant::new(slot.clone(), held, n)));
            }
            Attempt::Busy { retry_ms } => retry_ms.map(Duration::from_millis),
        };
        // Not kept while waiting: the handle's releases need turns too.
        drop(turn);
        let deadline = match wait {
            Wait::No => return Ok(None),
            Wait::Until(d) => d,
        };
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            if let Some(p) = place.as_mut() {
                p.armed = false;
                let _ = spec.ctx.store.leave_queue(&spec.key, &spec.holder).await;
            }
            crate::observe::timed_out(&spec.key, first.elapsed());
            return Err(Error::timeout(format!("timed out waiting for {}", spec.key)));
        }
        let Some(s) = sub.as_mut() else {
            // Subscribe, then attempt again at once: a release between the first attempt
            // and the subscription would otherwise go unnoticed.
            match spec.ctx.store.subscribe_for(&spec.key, &req).await {
                Ok(s) => sub = Some(s),
                Err(e) => outage.ride(e, wait).await?,
            }
            continue;
        };
        // Queue places must be refreshed well within their ttl.
        let mut step = retry.unwrap_or(RECHECK).min(RECHECK);
        if queued {
            step = step.min(spec.queue_ttl / 3);
        }
        let jitter = Duration::from_millis(rand::rng().random_range(0..=step.as_millis().min(50) as u64));
        let mut until = now + step + jitter;
        if let Some(d) = deadline {
            until = until.min(d);
        }
        if let Err(e) = s.changed(until).await {
            sub = None;
            outage.ride(e, wait).await?;
        }
        spec.ctx.check_open()?;
    }
}

/// How long a waiter rides out a store it cannot reach (a restart, a failover) before it
/// gives up with the store's error: within its wait, at most this long from the first
/// failure in a row.
pub(crate) const RIDE_OUT: Duration = Duration::from_secs(2);

/// The store failures in a row of one acquire.
#[derive(Default)]
struct Outage {
    /// When the waiter gives up, while failures go on.
    give_up: Option<Instant>,
    pause: Duration,
}

impl Outage {
    fn over(&mut self) {
        self.give_up = None;
    }

    /// Returns after a pause when a waiter may try again after `e`; otherwise `e`.
    async fn ride(&mut self, e: Error, wait: Wait) -> Result<()> {
        let Wait::Until(deadline) = wait else { return Err(e) };
        if e.kind() != crate::ErrorKind::Connection {
            return Err(e);
        }
        let now = Instant::now();
        let give_up = *self.give_up.get_or_insert_with(|| deadline.map_or(now + RIDE_OUT, |d| d.min(now + RIDE_OUT)));
        if now >= give_up {
            return Err(e);
        }
        self.pause = (self.pause * 2).clamp(Duration::from_millis(50), Duration::from_millis(400));
        crate::rt::sleep_until((now + self.pause).min(give_up)).await;
        Ok(())
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One store attempt, run in the caller's task and handed to the runtime if the caller
/// gives up before it ends (`Finish`), so that a grant that arrives after that is
/// released instead of leaked. Running it in the caller's task spares a thread crossing
/// per attempt, which matters wherever the caller's own thread drives the store's
/// connection.
///
/// The attempt has the slot's turn (`Slot::turn`) until its grant is recorded or given
/// back, so a re-entry counting more holds than the handle's guards have plus this one
/// means strays (earlier attempts whose answers were lost with their connection, or whose
/// give-back failed): they are given back here, so that the guards' releases free the
/// lock instead of leaving holds the watchdog would renew for as long as the handle lives.
async fn attempt(slot: &Arc<Slot>, req: &Request) -> Result<(Attempt, Turn)> {
    // Waiting for the turn sends nothing: a caller dropped here leaves nothing behind.
    let turn = slot.turn().await;
    let spec = &slot.spec;
    let store: Arc<dyn Store> = spec.ctx.store.clone();
    let (key, req, rt) = (spec.key.clone(), req.clone(), spec.ctx.rt.clone());
    let finish_on = spec.ctx.rt.clone();
    let mut answer = Finish(
        Some(Box::pin(async move {
            let mut out = store.acquire(&key, &req).await;
            if let Ok(Attempt::Granted { count, fresh: false, .. }) = &mut out
                && let Some(expected) = turn.expected_after_grant()
                && *count > expected
            {
                match store.release(&key, &req.holder, *count - expected).await {
                    Ok(_) => *count = expected,
                    // Not handed out with strays a guard's release would leave behind: the
                    // next attempt or release of this handle gives them back.
                    Err(e) => out = Err(e),
                }
            }
            // If the caller is gone, the answer is dropped with the task `Finish` handed
            // the rest to: `Answer::drop` gives the grant back.
            Answer { out: Some(out), store, key, req, rt, turn: Some(turn) }
        })),
        finish_on,
    )
    .await;
    let out = answer.out.take().unwrap_or_else(|| Err(Error::backend("internal error: empty answer")))?;
    let turn = answer.turn.take().ok_or_else(|| Error::backend("internal error: no turn"))?;
    Ok((out, turn))
}

/// A future polled by its owner until dropped; dropped unfinished, it finishes on the
/// runtime, where its output is dropped.
struct Finish<T: Send + 'static>(Option<std::pin::Pin<Box<dyn Future<Output = T> + Send>>>, crate::rt::Rt);

impl<T: Send + 'static> Future for Finish<T> {
    type Output = T;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<T> {
        // Finished: an `.await` never polls it again.
        let Some(fut) = self.0.as_mut() else { return std::task::Poll::Pending };
        let done = fut.as_mut().poll(cx);
        if done.is_ready() {
            self.0 = None;
        }
        done
    }
}

impl<T: Send + 'static> Drop for Finish<T> {
    fn drop(&mut self) {
        if let Some(fut) = self.0.take() {
            self.1.spawn(fut);
        }
    }
}

/// A store's answer to an attempt; gives back a grant nobody took out of it.
struct Answer {
    out: Option<Result<Attempt>>,
    store: Arc<dyn Store>,
    key: Key,
    req: Request,
    rt: crate::rt::Rt,
    /// Until a grant nobody took is given back.
    turn: Option<Turn>,
}

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some(Ok(Attempt::Busy { .. })) = self.out
            && self.req.enqueue
        {
            // This attempt (re)took a queue place after the caller's own `QueuePlace`
            // may already have left the queue: leave again, after it.
            let (b, k, h) = (self.store.clone(), self.key.clone(), self.req.holder.clone());
            self.rt.spawn(async move {
                let _ = b.leave_queue(&k, &h).await;
            });
        }
        if let Some(Ok(Attempt::Granted { .. })) = self.out {
            // Exactly the hold this attempt took (a re-entry added one).
            let n = if matches!(self.req.mode, Mode::Permits { .. }) { u32::MAX } else { 1 };
            let (b, k, h) = (self.store.clone(), self.key.clone(), self.req.holder.clone());
            let turn = self.turn.take();
            self.rt.spawn(async move {
                let _ = b.release(&k, &h, n).await;
                drop(turn);
            });
        }
    }
}

/// A queue place that is given up if the waiter goes away before being granted.
struct QueuePlace {
    store: Arc<dyn Store>,
    key: Key,
    holder: String,
    rt: crate::rt::Rt,
    armed: bool,
}

impl QueuePlace {
    fn new(slot: &Slot) -> QueuePlace {
        let spec = &slot.spec;
        QueuePlace {
            store: spec.ctx.store.clone(),
            key: spec.key.clone(),
            holder: spec.holder.clone(),
            rt: spec.ctx.rt.clone(),
            armed: true,
        }
    }
}

impl Drop for QueuePlace {
    fn drop(&mut self) {
        if self.armed {
            let (b, k, h) = (self.store.clone(), self.key.clone(), self.holder.clone());
            self.rt.spawn(async move {
                let _ = b.leave_queue(&k, &h).await;
            });
        }
    }
}
