//! The link a store's tasks drive themselves: on a plain `redis://` server, the core's
//! asynchronous calls write their requests on the calling task and read the answers there,
//! with the socket in the runtime's reactor (`AsyncFd`) and no connection task between.
//!
//! On the multiplexed connection each request crosses two tasks: the caller hands it to
//! the connection's task, which writes it, is woken by the reactor when the answer comes,
//! and wakes the caller. On a 2-core host each crossing may be a wake-up on the other core
//! (BENCHMARKS.md: the 1-task cycle, split). Here a
//! lone caller is the one the reactor wakes. Several callers share the link: the one whose
//! waker the reactor holds reads for all and hands each its answer; when it leaves while
//! others still wait, it wakes one of them to take its place.
//!
//! The link opens in the background on a store's first call (that call and any meanwhile
//! take the multiplexed connection). A link that fails fails its pending requests with a
//! connection error, as a multiplexed connection does, and the next call opens a new one;
//! after a failed connect none opens for a second (`super::RETRY`).

use std::future::Future;
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use redis::{RedisError, RedisResult};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::oneshot;

use super::{Direct, DrivenLink, Io, Kind, Pause, dropped, lock};
use crate::sync::LockExt;

/// The longest a lone waiter polls its socket before it parks (`DrivenLink::spin`).
const SPIN: Duration = Duration::from_micros(100);
/// No spin once a lone request that parks takes longer than this on average: a server
/// farther away than this host's loopback or LAN, whose answers a spin would not meet.
const SPIN_RTT: Duration = Duration::from_micros(250);
/// No spin on a runtime with more live tasks than this.
const SPIN_TASKS: usize = 16;
/// How often a waiter whose answer is late reads the socket itself: the hand-over of the
/// reader's part between waiters is the fast path, and this bounds what any wake-up it
/// misses could cost.
const TICK: Duration = Duration::from_millis(10);

/// Ids of waiters, unique in the process (0 is no waiter).
static NEXT_WAITER: AtomicU64 = AtomicU64::new(1);

/// A new waiter's id.
pub(super) fn next_waiter() -> u64 {
    NEXT_WAITER.fetch_add(1, Ordering::Relaxed)
}

/// A link's socket in the reactor of the runtime that opened it. A forked child leaves it
/// registered: the reactor's epoll instance is the parent's too, and a removal from the
/// child would remove the parent's interest.
pub(super) struct Registered {
    fd: ManuallyDrop<AsyncFd<RawFd>>,
    generation: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if crate::rt::fork_generation() == self.generation {
            // SAFETY: dropped once, here; never used after.
            unsafe { ManuallyDrop::drop(&mut self.fd) }
        }
    }
}

/// A store's tasks' link, opened on first use and again after it fails.
pub(super) struct Tasked(Arc<State>);

struct State {
    link: Mutex<Option<DrivenLink>>,
    opening: AtomicBool,
    /// No connect for a while after a failed one.
    paused: Pause,
    closed: AtomicBool,
}

impl Tasked {
    pub(super) fn new() -> Tasked {
        Tasked(Arc::new(State {
            link: Mutex::new(None),
            opening: AtomicBool::new(false),
            paused: Pause::default(),
            closed: AtomicBool::new(false),
        }))
    }

    /// The live link, or None (then it opens in the background, unless it is opening, the
    /// store is closed, connects are paused, or no runtime is current).
    pub(super) fn here(&self, d: &Direct, id: u64, store: &str) -> Option<DrivenLink> {
        let rt = tokio::runtime::Handle::try_current().ok()?;
        if let Some(link) = self.0.link.locked().as_ref().filter(|l| l.is_alive()) {
            return Some(link.clone());
        }
        if self.0.closed.load(Ordering::Acquire) || self.0.paused.on() || self.0.opening.swap(true, Ordering::AcqRel) {
            return None;
        }
        let (d, store, state) = (d.clone(), store.to_owned(), self.0.clone());
        rt.spawn(async move {
            let opened = tokio::task::spawn_blocking(move || DrivenLink::connect(&d, id, &store, Kind::Task)).await;
            let link = match opened {
                Ok(Ok(link)) if link.register().is_ok() => Some(link),
                _ => None,
            };
            match link {
                Some(link) => {
                    let mut slot = state.link.locked();
                    if state.closed.load(Ordering::Acquire) {
                        link.close();
                    } else {
                        *slot = Some(link);
                    }
                }
                None => state.paused.start(),
            }
            state.opening.store(false, Ordering::Release);
        });
        None
    }

    /// Closes the link (its pending requests fail); none opens after this.
    pub(super) fn close(&self) {
        let link = {
            let mut slot = self.0.link.locked();
            self.0.closed.store(true, Ordering::Release);
            slot.take()
        };
        if let Some(link) = link {
            link.close();
        }
    }
}

impl DrivenLink {
    /// Puts the socket in the current runtime's reactor: from now on the tasks that wait
    /// for its answers drive it.
    fn register(&self) -> io::Result<()> {
        let fd = self.0.fd;
        // SAFETY: `fd` is the socket's, which `Shared::io` keeps open (a dead link's too) until
        // after `Shared::tasks`, holding this, is dropped.
        let register = || unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE | Interest::WRITABLE) };
        // A runtime built without I/O panics here; the link is then not used.
        let fd = std::panic::catch_unwind(register)
            .map_err(|_| io::Error::other("the runtime has no I/O driver"))?
            .map_err(io::Error::from)?;
        let _ = self.0.tasks.set(Registered { fd: ManuallyDrop::new(fd), generation: crate::rt::fork_generation() });
        Ok(())
    }

    /// Does the I/O the socket is ready for, for the waiter `id`: true when its answer may
    /// have come (it read, its request is no longer queued, or the link died, which
    /// answered every request), false when nothing more is ready (the reactor then holds
    /// this waiter's waker for the socket).
    fn drive(&self, cx: &mut Context<'_>, id: u64, spun: &mut Option<bool>) -> bool {
        let Some(reg) = self.0.tasks.get() else { return false };
        let fd = &*reg.fd;
        let mut done = Vec::new();
        let mut io = lock(&self.0.io);
        // Answered by another waiter (answers are sent under the lock) or failed.
        if !io.alive || !io.waiting.iter().any(|w| w.waiter == id) {
            return true;
        }
        if !io.out.is_empty() {
            match fd.poll_write_ready(cx) {
                Poll::Ready(Ok(mut ready)) => {
                    done.extend(io.write_out());
                    if io.alive && !io.out.is_empty() {
                        ready.clear_ready();
                    }
                }
                Poll::Ready(Err(e)) => done.extend(io.kill(&e.to_string())),
                Poll::Pending => io.park(id, cx, true),
            }
        }
        let (read, alone) = if !io.alive {
            (true, false)
        } else {
            match fd.poll_read_ready(cx) {
                Poll::Ready(Ok(mut ready)) => {
                    // Drained: bytes that come later raise a new edge in the reactor.
                    if io.read_in(&mut done) {
                        ready.clear_ready();
                    }
                    (true, false)
                }
                Poll::Ready(Err(e)) => {
                    done.extend(io.kill(&e.to_string()));
                    (true, false)
                }
                Poll::Pending => {
                    io.park(id, cx, false);
                    (false, io.waiting.len() == 1 && io.out.is_empty())
                }
            }
        };
        super::finish(io, done, id);
        if read || !alone {
            return read;
        }
        // One choice a request, kept for its time to count where it was made.
        let spin = *spun.get_or_insert_with(|| self.0.spin.choose(self.0.fd));
        spin && self.spin(id)
    }

    /// A lone request's waiter polls the socket for up to [`SPIN`] before it parks (when
    /// [`Spin::choose`] says so). Each turn yields the CPU to whatever else is runnable on
    /// it. True when it read (the waiter is then polled at once; the reactor still holds
    /// its waker otherwise).
    fn spin(&self, id: u64) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < SPIN {
            std::thread::yield_now();
            let mut done = Vec::new();
            let mut io = lock(&self.0.io);
            let alive = io.read_in(&mut done);
            let (read, alone) = (!done.is_empty() || !alive, io.waiting.len() == 1);
            super::finish(io, done, id);
            if read {
                return true;
            }
            if !alone {
                // Another request came: its waiter polls the socket too.
                return false;
            }
        }
        false
    }
}

/// Whether a lone request's waiter spins before it parks, as Go's scheduler spins before
/// it sleeps: on a host whose idle cores sleep (a VM's vCPUs halt), waking one for each
/// answer costs more than the answer takes (BENCHMARKS.md, "Where the threads run"). But
/// a spin takes a CPU that the server, or anything else on it, may need. So each link
/// measures both ways, as the running means of a lone request's time spun and parked,
/// and most requests take the faster, every [`PROBE`]th the other, so that a change of
/// placement is seen. Never where it cannot pay or would harm: a server farther than
/// [`SPIN_RTT`], one that answers on this thread's CPU (it needs the CPU the spin would
/// take), or a runtime with more than [`SPIN_TASKS`] live tasks (a spinning worker holds
/// up the tasks queued behind it).
#[derive(Default)]
pub(super) struct Spin {
    /// Running means (1/8 weight) of a lone request's time, in µs (0: not known yet).
    spun_us: AtomicU64,
    parked_us: AtomicU64,
    choices: AtomicU64,
}

/// One lone request in this many takes the way that measured slower.
const PROBE: u64 = 16;

impl Spin {
    fn choose(&self, fd: RawFd) -> bool {
        let parked = self.parked_us.load(Ordering::Relaxed);
        if Duration::from_micros(parked) > SPIN_RTT
            || tokio::runtime::Handle::try_current().map_or(true, |h| h.metrics().num_alive_tasks() > SPIN_TASKS)
            || server_on_this_cpu(fd)
        {
            return false;
        }
        let spun = self.spun_us.load(Ordering::Relaxed);
        // Unknown first: the first lone request parks, the next spins.
        let better = match (spun, parked) {
            (_, 0) => false,
            (0, _) => true,
            _ => spun < parked,
        };
        let n = self.choices.fetch_add(1, Ordering::Relaxed);
        if n % PROBE == PROBE - 1 { !better } else { better }
    }

    /// Folds a lone request's time into the mean of the way it took.
    fn took(&self, spun: bool, t: Duration) {
        let us = u64::try_from(t.as_micros()).unwrap_or(u64::MAX).max(1);
        let mean = if spun { &self.spun_us } else { &self.parked_us };
        let old = mean.load(Ordering::Relaxed);
        mean.store(if old == 0 { us } else { old - old / 8 + us / 8 }, Ordering::Relaxed);
    }
}

/// Whether the server's last answer was received on the CPU this thread runs on
/// (`SO_INCOMING_CPU`: on loopback, the server's CPU). False when either is unknown.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "x86")))]
fn server_on_this_cpu(fd: RawFd) -> bool {
    const SO_INCOMING_CPU: libc::c_int = 49;
    let mut cpu: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid out pointer and its length, for the call's duration.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, SO_INCOMING_CPU, (&raw mut cpu).cast(), &raw mut len) };
    // SAFETY: no arguments; reads this thread's CPU.
    r == 0 && cpu >= 0 && cpu == unsafe { libc::sched_getcpu() }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "x86"))))]
fn server_on_this_cpu(_: RawFd) -> bool {
    false
}

impl Io {
    /// The reactor now holds waiter `id`'s waker for the socket (for writing or reading).
    fn park(&mut self, id: u64, cx: &Context<'_>, write: bool) {
        if write {
            self.writer = id;
        } else {
            self.reader = id;
        }
        match self.parked.iter_mut().find(|(i, _)| *i == id) {
            Some((_, w)) => w.clone_from(cx.waker()),
            None => self.parked.push((id, cx.waker().clone())),
        }
    }

    /// Waiter `id` leaves. When nobody is left to read for the others (it held the
    /// reactor's wake-up, or the waiter handed that part before it left without taking it:
    /// woken for the part, it found its own answer read already), the first parked waiter
    /// is woken to take it (it polls the socket again, which hands the reactor its waker).
    fn unpark(&mut self, id: u64) -> Option<std::task::Waker> {
        self.parked.retain(|(i, _)| *i != id);
        if self.reader == id {
            self.reader = 0;
        }
        if self.writer == id {
            self.writer = 0;
        }
        if self.reader != 0 && (self.writer != 0 || self.out.is_empty()) {
            return None;
        }
        self.parked.first().map(|(_, w)| w.clone())
    }
}

/// The answer to a request on a tasks' link: polling it reads the socket when the answer
/// has not come yet, bounded by the store's request timeout.
pub(super) struct Answer<T> {
    link: DrivenLink,
    rx: oneshot::Receiver<RedisResult<T>>,
    /// The next [`TICK`], or the deadline when nearer.
    tick: Pin<Box<tokio::time::Sleep>>,
    deadline: tokio::time::Instant,
    id: u64,
    sent: Instant,
    /// Whether its waiter, alone on the link, chose to spin (None: never alone).
    spun: Option<bool>,
    /// Answered: it left the link's waiters.
    left: bool,
}

impl<T> Answer<T> {
    pub(super) fn new(link: DrivenLink, rx: oneshot::Receiver<RedisResult<T>>, id: u64) -> Answer<T> {
        let now = tokio::time::Instant::now();
        let deadline = now + link.0.timeout;
        let tick = Box::pin(tokio::time::sleep_until((now + TICK).min(deadline)));
        Answer { link, rx, tick, deadline, id, sent: Instant::now(), spun: None, left: false }
    }
}

impl<T> Future for Answer<T> {
    type Output = RedisResult<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RedisResult<T>> {
        let this = self.get_mut();
        loop {
            // No waker left with the receiver: whoever sends this answer wakes this
            // waiter if it is parked (`super::finish`), unless it is this waiter itself.
            let r = match this.rx.try_recv() {
                Ok(r) => r,
                Err(oneshot::error::TryRecvError::Closed) => Err(dropped("the link was dropped")),
                Err(oneshot::error::TryRecvError::Empty) => {
                    if this.link.drive(cx, this.id, &mut this.spun) {
                        continue;
                    }
                    if this.tick.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    let now = tokio::time::Instant::now();
                    if now >= this.deadline {
                        // The request stays queued: its answer, if it comes, is read and dropped.
                        this.leave();
                        return Poll::Ready(Err(RedisError::from(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "no answer in time",
                        ))));
                    }
                    this.tick.as_mut().reset((now + TICK).min(this.deadline));
                    continue;
                }
            };
            if let (Ok(_), Some(spun)) = (&r, this.spun) {
                this.link.0.spin.took(spun, this.sent.elapsed());
            }
            this.leave();
            return Poll::Ready(r);
        }
    }
}

impl<T> Answer<T> {
    /// Leaves the link's waiters (once).
    fn leave(&mut self) {
        if std::mem::replace(&mut self.left, true) {
            return;
        }
        let next = lock(&self.link.0.io).unpark(self.id);
        if let Some(w) = next {
            w.wake();
        }
    }
}

impl<T> Drop for Answer<T> {
    fn drop(&mut self) {
        self.leave();
    }
}
