//! A command connection that the caller's event loop drives: [`DrivenLink`].
//!
//! The Node binding polls its hot calls (acquire, release) on the JavaScript thread and
//! watches this link's socket with libuv, as ioredis watches its own: a request is written
//! from the thread that polls it, and Redis's answer wakes that same thread. With the usual
//! multiplexed connection the answer lands on a runtime worker, which must then wake the
//! JavaScript thread — two thread crossings a call that this link saves (BENCHMARKS.md,
//! "Node, JavaScript-thread link").
//!
//! Only commands polled on a thread where the link is [installed](DrivenLink::install) go
//! over it (`here`); background work (watchdog renewals, releases of dropped guards) runs on
//! the runtime and keeps the multiplexed connection. A link that fails fails its pending
//! requests with a connection error and is never used again: later calls take the
//! multiplexed connection, which reconnects.
//!
//! `home` is a store's side (which link a call takes), `connect` opens and logs in a link,
//! `queue` holds its socket and answer queue, `resp` frames the answers; `own` and `task`
//! are the two kinds of link whose waiters drive them.

mod connect;
mod home;
mod own;
#[cfg(feature = "driven-link")]
pub use self::own::drive_here;
mod queue;
mod resp;
#[cfg(unix)]
mod task;

use std::cell::RefCell;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::{Cmd, RedisError, RedisResult, Value};
use tokio::sync::oneshot;

pub(super) use self::home::Home;
// What `own` and `task` take from here (`super::…`).
use self::home::{Direct, Kind, Pause};
use self::queue::{Io, Waiting, Want, dropped, finish, lock};

/// A Redis connection whose socket the caller watches: call [`on_readable`] when the
/// socket is readable and [`flush`] when it is writable and [`wants_write`] says so.
///
/// [`on_readable`]: DrivenLink::on_readable
/// [`flush`]: DrivenLink::flush
/// [`wants_write`]: DrivenLink::wants_write
#[derive(Clone)]
pub struct DrivenLink(Arc<Shared>);

struct Shared {
    /// The id of the store this link serves (`Home::id`).
    store: u64,
    timeout: Duration,
    db: i64,
    fd: i32,
    /// A thread's own link (`own`): its requests are answered by the thread that waits.
    own: bool,
    /// A tasks' link (`task`): its socket in the runtime's reactor. Declared before `io`,
    /// so that it leaves the reactor before the socket closes.
    #[cfg(unix)]
    tasks: std::sync::OnceLock<task::Registered>,
    /// A tasks' link: whether a lone request's waiter spins (`task`).
    #[cfg(unix)]
    spin: task::Spin,
    io: Mutex<Io>,
}

thread_local! {
    /// The links installed on this thread (one per client, usually none or one).
    static HERE: RefCell<Vec<DrivenLink>> = const { RefCell::new(Vec::new()) };
}

impl DrivenLink {
    pub(super) fn db(&self) -> i64 {
        self.0.db
    }

    /// The socket's file descriptor, for the caller's loop to watch.
    pub fn fd(&self) -> i32 {
        self.0.fd
    }

    /// Serves the store's commands polled on this thread until [`uninstall`](Self::uninstall).
    pub fn install(&self) {
        HERE.with(|h| {
            let mut h = h.borrow_mut();
            if !h.iter().any(|l| Arc::ptr_eq(&l.0, &self.0)) {
                h.push(self.clone());
            }
        });
    }

    /// Whether `other` is this link (a clone of it).
    pub fn same(&self, other: &DrivenLink) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Stops serving this thread's commands.
    pub fn uninstall(&self) {
        HERE.with(|h| h.borrow_mut().retain(|l| !Arc::ptr_eq(&l.0, &self.0)));
    }

    /// Whether the connection still works.
    pub fn is_alive(&self) -> bool {
        lock(&self.0.io).alive
    }

    /// Requests sent and not yet answered.
    pub fn pending(&self) -> usize {
        lock(&self.0.io).waiting.len()
    }

    /// Whether bytes wait for the socket to be writable.
    pub fn wants_write(&self) -> bool {
        !lock(&self.0.io).out.is_empty()
    }

    /// The socket is writable: writes what waits. False once the link is dead.
    pub fn flush(&self) -> bool {
        let mut io = lock(&self.0.io);
        let done = io.write_out();
        let alive = io.alive;
        finish(io, done, 0);
        alive
    }

    /// The socket is readable: reads what is there and hands out every whole answer (each
    /// wakes the task waiting for it). False once the link is dead. It may stop reading
    /// once the socket looks drained: watch the socket level-triggered (libuv does), or
    /// clear an edge-triggered readiness before calling (as `AsyncFd` users do).
    pub fn on_readable(&self) -> bool {
        let mut done = Vec::new();
        let mut io = lock(&self.0.io);
        io.read_in(&mut done);
        let alive = io.alive;
        finish(io, done, 0);
        alive
    }

    /// Closes the connection (pending requests fail with a connection error).
    pub fn close(&self) {
        let mut io = lock(&self.0.io);
        let done = io.kill("the client closed it");
        finish(io, done, 0);
    }

    /// Queues `bytes` for the answers `w` waits for, and writes at once.
    fn enqueue(&self, bytes: impl FnOnce(&mut Vec<u8>), w: Waiting) -> RedisResult<()> {
        let mut io = lock(&self.0.io);
        if !io.alive {
            return Err(dropped("the link failed before"));
        }
        bytes(&mut io.out);
        let me = w.waiter;
        io.waiting.push_back(w);
        let done = io.write_out();
        finish(io, done, me);
        Ok(())
    }

    /// A new waiter's id on a tasks' link; 0 on the others.
    fn waiter(&self) -> u64 {
        #[cfg(unix)]
        if self.0.tasks.get().is_some() {
            return task::next_waiter();
        }
        0
    }

    async fn answer<T>(&self, rx: oneshot::Receiver<RedisResult<T>>, waiter: u64) -> RedisResult<T> {
        if self.0.own {
            return own::Answer::new(self.clone(), rx).await;
        }
        #[cfg(unix)]
        if waiter != 0 {
            return task::Answer::new(self.clone(), rx, waiter).await;
        }
        match tokio::time::timeout(self.0.timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(dropped("the link was dropped")),
            Err(_) => Err(RedisError::from(io::Error::new(io::ErrorKind::TimedOut, "no answer in time"))),
        }
    }

    pub(super) async fn request(&self, cmd: &Cmd) -> RedisResult<Value> {
        let (tx, rx) = oneshot::channel();
        let waiter = self.waiter();
        self.enqueue(|out| cmd.write_packed_command(out), Waiting { waiter, want: Want::One(tx) })?;
        self.answer(rx, waiter).await
    }

    pub(super) async fn request_many(
        &self,
        pipe: &redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let (tx, rx) = oneshot::channel();
        let waiter = self.waiter();
        let w = Waiting { waiter, want: Want::Many { skip: offset, left: count, got: Vec::with_capacity(count), tx } };
        if offset + count == 0 {
            return Ok(Vec::new());
        }
        self.enqueue(|out| out.extend_from_slice(&pipe.get_packed_pipeline()), w)?;
        self.answer(rx, waiter).await
    }
}
