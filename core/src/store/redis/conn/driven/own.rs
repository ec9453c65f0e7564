//! A thread's own link: while a host thread blocks on a core call inside
//! [`drive_here`] (the JVM's blocking calls, Python's synchronous API), that call's Redis
//! requests go over a connection of the thread's own, written by the thread and answered
//! to it, with no runtime worker between the socket and the caller: the two thread
//! wake-ups a request costs on the multiplexed connection (its worker reads the answer,
//! then wakes the caller) are gone, as in redis-py or Jedis. See ARCHITECTURE.md, "When a
//! binding may own an executor".
//!
//! A store opens at most [`MAX`] such links (one a thread, on first use); past that, and
//! for a short while after a connect fails, calls take the multiplexed connection. A link
//! lives until its thread ends or the client closes. Only commands polled on a thread
//! inside `drive_here` use it: the same thread's asynchronous calls, and every background
//! task (watchdog renewals), keep the multiplexed connection.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use redis::{RedisError, RedisResult};
use tokio::sync::oneshot::{self, error::TryRecvError};

use super::{Direct, DrivenLink, Pause, Shared, dropped};
use crate::sync::LockExt;

/// Own links a store opens at most: about one a thread of a host's pool, as a pooled
/// client (Jedis, Redisson's 64) would hold; busier hosts share the multiplexed one.
const MAX: usize = 64;

/// The longest a thread blocks in one poll of an answer before it lets the future that
/// waits return `Pending` (so that a timer around it, such as Python's signal tick, runs).
const SLICE: Duration = Duration::from_millis(20);

thread_local! {
    /// Whether this thread is inside `drive_here`.
    static ON: Cell<bool> = const { Cell::new(false) };
    /// This thread's own links, one per store.
    static MINE: RefCell<Vec<DrivenLink>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f`, which blocks this thread on core futures (`rt::block_on` or the shared
/// runtime's `block_on`), with this thread's own links on: each plain `redis://` store's
/// requests polled here go over a connection this thread drives itself.
pub fn drive_here<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ON.with(|on| on.set(self.0));
        }
    }
    let _restore = Restore(ON.with(|on| on.replace(true)));
    f()
}

/// A store's own links, kept to count them and to close them with the store (weakly: a
/// link ends with its thread).
pub(super) struct Owned {
    links: Mutex<Vec<Weak<Shared>>>,
    /// No connect for a while after a failed one.
    paused: Pause,
    /// The process generation the store was made in (`rt::fork_generation`).
    generation: u64,
}

impl Owned {
    pub(super) fn new() -> Owned {
        Owned { links: Mutex::default(), paused: Pause::default(), generation: crate::rt::fork_generation() }
    }

    /// This thread's own link to the store `id`, opened on first use; None outside
    /// `drive_here`, past [`MAX`], or while connects are paused.
    pub(super) fn here(&self, d: &Direct, id: u64, store: &str) -> Option<DrivenLink> {
        if !cfg!(unix) || !ON.with(Cell::get) {
            return None;
        }
        let mine = MINE.with(|m| {
            let mut m = m.borrow_mut();
            m.retain(DrivenLink::is_alive);
            m.iter().find(|l| l.0.store == id).cloned()
        });
        if mine.is_some() {
            return mine;
        }
        {
            let mut links = self.links.locked();
            links.retain(|l| l.upgrade().is_some_and(|l| DrivenLink(l).is_alive()));
            if links.len() >= MAX || self.paused.on() {
                return None;
            }
        }
        // Outside the locks: a connect may take up to the connect timeout.
        match DrivenLink::connect(d, id, store, super::Kind::Own) {
            Ok(link) => {
                self.links.locked().push(Arc::downgrade(&link.0));
                MINE.with(|m| m.borrow_mut().push(link.clone()));
                Some(link)
            }
            Err(_) => {
                // The call goes on over the multiplexed connection, which reports its own error.
                self.paused.start();
                None
            }
        }
    }

    /// Closes every own link (their threads drop them at their next call). Not in a forked
    /// child: its links' sockets are the parent's too, and a shutdown would cut them there.
    pub(super) fn close(&self) {
        if crate::rt::fork_generation() != self.generation {
            return;
        }
        for link in self.links.locked().drain(..).filter_map(|l| l.upgrade()) {
            DrivenLink(link).close();
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.close();
    }
}

/// The answer to a request on an own link: polling it reads the socket on this thread
/// until the answer is there (at most [`SLICE`] a poll) or the request's time is up.
pub(super) struct Answer<T> {
    link: DrivenLink,
    rx: oneshot::Receiver<RedisResult<T>>,
    deadline: Instant,
}

impl<T> Answer<T> {
    pub(super) fn new(link: DrivenLink, rx: oneshot::Receiver<RedisResult<T>>) -> Answer<T> {
        let deadline = Instant::now() + link.0.timeout;
        Answer { link, rx, deadline }
    }
}

impl<T> Future for Answer<T> {
    type Output = RedisResult<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RedisResult<T>> {
        let this = self.get_mut();
        let until = (Instant::now() + SLICE).min(this.deadline);
        loop {
            match this.rx.try_recv() {
                Ok(r) => return Poll::Ready(r),
                Err(TryRecvError::Closed) => return Poll::Ready(Err(dropped("the link was dropped"))),
                Err(TryRecvError::Empty) => {}
            }
            let now = Instant::now();
            if now >= this.deadline {
                return Poll::Ready(Err(RedisError::from(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no answer in time",
                ))));
            }
            if now >= until {
                // Another poll soon: whatever wraps this future gets its turn meanwhile.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            wait_io(&this.link, until - now);
        }
    }
}

/// Blocks until the link's socket is ready (readable, or writable while bytes wait) or
/// `limit` passes, then does what it is ready for (which answers the waiting requests).
#[cfg(unix)]
fn wait_io(link: &DrivenLink, limit: Duration) {
    let write = link.wants_write();
    let mut fds =
        libc::pollfd { fd: link.0.fd, events: libc::POLLIN | if write { libc::POLLOUT } else { 0 }, revents: 0 };
    // At least 1 ms: a zero timeout would spin.
    let ms = limit.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd, for the call's duration; the link keeps the fd open.
    let n = unsafe { libc::poll(&mut fds, 1, ms) };
    if n > 0 {
        if fds.revents & libc::POLLOUT != 0 {
            link.flush();
        }
        if fds.revents & !libc::POLLOUT != 0 {
            // Readable, or hung up or failed: the read tells which.
            link.on_readable();
        }
    }
}

/// Never reached: own links open on unix only.
#[cfg(not(unix))]
fn wait_io(link: &DrivenLink, limit: Duration) {
    std::thread::sleep(limit.min(Duration::from_millis(1)));
    link.on_readable();
}
