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

mod own;
#[cfg(feature = "driven-link")]
pub use self::own::drive_here;
mod resp;
#[cfg(unix)]
mod task;

use crate::sync::LockExt;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::{Cmd, RedisError, RedisResult, Value};
use tokio::sync::oneshot;

use self::resp::{frame_len, parse};
use crate::error::{Error, Result};
use crate::store::redis::config::{RedisConfig, Topology};

/// The connection name of every link an event loop drives (`CLIENT SETNAME`).
const NAME: &str = "baton-driven";
/// The connection name of every thread's own link (`own`).
const OWN_NAME: &str = "baton-own";
/// The connection name of a store's link its waiting tasks drive (`task`).
const TASK_NAME: &str = "baton-task";

/// Who drives a link: the connection name it gets, and how its answers are waited for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An event loop that watches its socket (Node's).
    Loop,
    /// The one host thread that owns it (`own`).
    Own,
    /// Whichever task waits for an answer (`task`).
    Task,
}

/// How long after a failed connect a store opens no own or tasks' link (its calls
/// meanwhile take the multiplexed connection, which reconnects on its own).
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// No connect of a kind of link before a time, set after a failed one ([`RETRY`]).
#[derive(Default)]
struct Pause(Mutex<Option<std::time::Instant>>);

impl Pause {
    fn on(&self) -> bool {
        self.0.locked().is_some_and(|t| std::time::Instant::now() < t)
    }

    fn start(&self) {
        *self.0.locked() = Some(std::time::Instant::now() + RETRY);
    }
}

/// The next store id: a link serves the store whose id it carries.
static NEXT_STORE: AtomicU64 = AtomicU64::new(1);

/// What a plain `redis://` server link needs to log in (kept by the store; never printed).
#[derive(Clone)]
struct Direct {
    host: String,
    port: u16,
    user: Option<String>,
    password: Option<String>,
    db: i64,
    connect_timeout: Duration,
    timeout: Duration,
}

/// A store's side of its driven links: its id (which the links installed on a thread are
/// looked up by) and, on a plain `redis://` server, how to open one.
pub(super) struct Home {
    id: u64,
    direct: Option<Direct>,
    /// The links threads inside `drive_here` opened to this store (`own`).
    owned: own::Owned,
    /// The link this store's tasks drive themselves (`task`).
    #[cfg(unix)]
    tasked: task::Tasked,
}

impl Home {
    /// `lazy` (a `redlock://` node), TLS, a cluster and sentinels get no link, nor a store
    /// that sends `WAIT` after its grants (`WAIT` counts the writes of the connection it is
    /// sent on, so both go on the multiplexed one; and an event loop's grants, which do not
    /// pass the store's `acquire`, would send none). A Redlock node keeps the multiplexed
    /// connection: over the tasks' link its cycles measured slower (BENCHMARKS.md), and a
    /// thread waiting on one node's socket would hold up the other nodes' answers.
    pub(super) fn new(cfg: &RedisConfig, lazy: bool) -> Home {
        let direct = match &cfg.topology {
            Topology::Single { host, port } if !cfg.tls && !lazy && cfg.wait.is_none() => Some(Direct {
                host: host.clone(),
                port: *port,
                user: cfg.user.clone(),
                password: cfg.password.clone(),
                db: cfg.db,
                connect_timeout: cfg.connect_timeout,
                timeout: cfg.timeout,
            }),
            _ => None,
        };
        Home {
            id: NEXT_STORE.fetch_add(1, Ordering::Relaxed),
            direct,
            owned: own::Owned::new(),
            #[cfg(unix)]
            tasked: task::Tasked::new(),
        }
    }

    /// The live link installed on this thread for this store, or else this thread's own
    /// link when it is inside `drive_here` (opened on first use), or else the link the
    /// store's tasks drive (None while it opens: the call takes the multiplexed connection).
    pub(super) fn here(&self, store: &str) -> Option<DrivenLink> {
        let d = self.direct.as_ref()?;
        HERE.with(|h| h.borrow().iter().find(|l| l.0.store == self.id && l.is_alive()).cloned())
            .or_else(|| self.owned.here(d, self.id, store))
            .or_else(|| self.tasks(d, store))
    }

    #[cfg(unix)]
    fn tasks(&self, d: &Direct, store: &str) -> Option<DrivenLink> {
        self.tasked.here(d, self.id, store)
    }

    #[cfg(not(unix))]
    fn tasks(&self, _: &Direct, _: &str) -> Option<DrivenLink> {
        None
    }

    /// Closes the links threads and tasks opened to this store (`own`, `task`).
    pub(super) fn close(&self) {
        self.owned.close();
        #[cfg(unix)]
        self.tasked.close();
    }

    /// A new link to the plain server for an event loop to drive (None elsewhere, and off
    /// unix); the connect blocks a blocking-pool thread, never the caller's loop.
    #[cfg(feature = "driven-link")]
    pub(super) async fn open(&self, store: &str) -> Result<Option<DrivenLink>> {
        match &self.direct {
            Some(d) if cfg!(unix) => {
                let (d, id, store) = (d.clone(), self.id, store.to_owned());
                tokio::task::spawn_blocking(move || DrivenLink::connect(&d, id, &store, Kind::Loop))
                    .await
                    .map_err(|e| Error::backend(format!("internal error: {e}")))?
                    .map(Some)
            }
            _ => Ok(None),
        }
    }
}

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

struct Io {
    /// Kept open until the link is dropped, dead or not: the caller's loop may still
    /// watch its descriptor, which must not be reused meanwhile.
    sock: TcpStream,
    alive: bool,
    /// Bytes not yet written.
    out: Vec<u8>,
    /// Bytes read, not yet a whole answer.
    inbuf: Vec<u8>,
    /// What each `read` fills (zeroed once, not on every read).
    rbuf: Box<[u8]>,
    /// Who gets the next answers, in order.
    waiting: VecDeque<Waiting>,
    /// A tasks' link: the tasks waiting for an answer, by waiter id (`task`).
    parked: Vec<(u64, std::task::Waker)>,
    /// A tasks' link: the waiters whose wakers the reactor holds for reading and for
    /// writing (0: none).
    reader: u64,
    writer: u64,
}

/// A request waiting for its answer: who waits (on a tasks' link, the waiter's id; else 0)
/// and what for.
struct Waiting {
    waiter: u64,
    want: Want,
}

enum Want {
    One(oneshot::Sender<RedisResult<Value>>),
    /// A pipeline: `skip` answers dropped, then `left` kept.
    Many {
        skip: usize,
        left: usize,
        got: Vec<Value>,
        tx: oneshot::Sender<RedisResult<Vec<Value>>>,
    },
}

/// An answer for the head of the queue, and who waits for it (`Waiting::waiter`).
struct Done {
    waiter: u64,
    answer: Answered,
}

enum Answered {
    One(oneshot::Sender<RedisResult<Value>>, RedisResult<Value>),
    Many(oneshot::Sender<RedisResult<Vec<Value>>>, RedisResult<Vec<Value>>),
}

impl Done {
    fn send(self) {
        // A receiver gone is a caller that stopped waiting: its answer is dropped.
        match self.answer {
            Answered::One(tx, r) => drop(tx.send(r)),
            Answered::Many(tx, r) => drop(tx.send(r)),
        }
    }
}

/// Lets go of the lock and hands out `done`, answered while it was held by `me` (a waiter
/// id, or 0). On a tasks' link (waiter ids set) the answers are sent before the lock is
/// let go and the other waiters they answer are woken after: their receivers hold no
/// waker, because a waiter that reads its own answer must not wake itself (its task would
/// be rescheduled as a yield, waking another worker to steal it: a futex call and often a
/// move to the other CPU each request), and a waiter that finds its request no longer
/// queued knows its answer is there. Elsewhere they are sent after (a send wakes a task).
fn finish(io: std::sync::MutexGuard<'_, Io>, done: Vec<Done>, me: u64) {
    if done.first().is_some_and(|d| d.waiter != 0) {
        let wake: Vec<std::task::Waker> = done
            .iter()
            .filter(|d| d.waiter != me)
            .filter_map(|d| io.parked.iter().find(|(i, _)| *i == d.waiter).map(|(_, w)| w.clone()))
            .collect();
        done.into_iter().for_each(Done::send);
        drop(io);
        wake.into_iter().for_each(std::task::Waker::wake);
    } else {
        drop(io);
        done.into_iter().for_each(Done::send);
    }
}

fn lock(m: &Mutex<Io>) -> std::sync::MutexGuard<'_, Io> {
    m.locked()
}

/// What a failed socket call during the login says (a read past its timeout fails as
/// `WouldBlock` on unix).
fn why(e: io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "timed out".to_owned(),
        _ => e.to_string(),
    }
}

fn dropped(why: &str) -> RedisError {
    RedisError::from(io::Error::new(io::ErrorKind::ConnectionAborted, format!("connection lost: {why}")))
}

thread_local! {
    /// The links installed on this thread (one per client, usually none or one).
    static HERE: RefCell<Vec<DrivenLink>> = const { RefCell::new(Vec::new()) };
}

impl Io {
    /// Fails every waiting request and closes the socket.
    fn kill(&mut self, why: &str) -> Vec<Done> {
        if std::mem::replace(&mut self.alive, false) {
            let _ = self.sock.shutdown(std::net::Shutdown::Both);
        }
        self.out.clear();
        self.inbuf.clear();
        self.waiting
            .drain(..)
            .map(|w| Done {
                waiter: w.waiter,
                answer: match w.want {
                    Want::One(tx) => Answered::One(tx, Err(dropped(why))),
                    Want::Many { tx, .. } => Answered::Many(tx, Err(dropped(why))),
                },
            })
            .collect()
    }

    /// Writes what the socket takes now.
    fn write_out(&mut self) -> Vec<Done> {
        if !self.alive {
            return Vec::new();
        }
        let mut sent = 0;
        let failed = loop {
            if sent == self.out.len() {
                break None;
            }
            match self.sock.write(&self.out[sent..]) {
                Ok(0) => break Some("the socket took no bytes".to_owned()),
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e.to_string()),
            }
        };
        self.out.drain(..sent);
        match failed {
            Some(why) => self.kill(&why),
            None => Vec::new(),
        }
    }

    /// Reads what the socket holds and hands out every whole answer (into `done`). It
    /// stops once the socket looks drained (a short read: one `recv` a call, not two), so
    /// the caller watches it level-triggered, or (edge-triggered) clears its readiness
    /// after this returns true: bytes that come later raise a new edge.
    fn read_in(&mut self, done: &mut Vec<Done>) -> bool {
        let failed = loop {
            if !self.alive {
                break None;
            }
            match self.sock.read(&mut self.rbuf) {
                Ok(0) => break Some("the server closed the connection".to_owned()),
                Ok(n) => {
                    self.inbuf.extend_from_slice(&self.rbuf[..n]);
                    if n < self.rbuf.len() {
                        break None;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e.to_string()),
            }
        };
        // Answers read before a failure still go to their askers.
        if let Err(why) = self.answers(done) {
            done.extend(self.kill(&why));
        }
        if let Some(why) = failed {
            done.extend(self.kill(&why));
        }
        self.alive
    }

    /// Hands every whole answer in `inbuf` to the head of the queue.
    fn answers(&mut self, done: &mut Vec<Done>) -> std::result::Result<(), String> {
        let mut at = 0;
        while let Some(len) = frame_len(&self.inbuf[at..])? {
            let v = parse(&self.inbuf[at..at + len])?;
            at += len;
            match self.waiting.front_mut().map(|w| &mut w.want) {
                None => return Err("an answer nobody asked for".to_owned()),
                Some(Want::One(_)) => {
                    let Some(Waiting { waiter, want: Want::One(tx) }) = self.waiting.pop_front() else {
                        unreachable!()
                    };
                    done.push(Done { waiter, answer: Answered::One(tx, v.extract_error()) });
                }
                Some(Want::Many { skip, left, got, .. }) => {
                    if *skip > 0 {
                        *skip -= 1;
                    } else {
                        got.push(v);
                        *left -= 1;
                    }
                    if *skip == 0 && *left == 0 {
                        let Some(Waiting { waiter, want: Want::Many { tx, got, .. } }) = self.waiting.pop_front()
                        else {
                            unreachable!()
                        };
                        done.push(Done { waiter, answer: Answered::Many(tx, Ok(got)) });
                    }
                }
            }
        }
        self.inbuf.drain(..at);
        Ok(())
    }
}

impl DrivenLink {
    /// Connects and logs in, blocking the calling thread (at most `connect_timeout` for the
    /// connect and again for the login): a thread's own link opens on that thread
    /// (`own`), the event loop's on a blocking-pool thread ([`Home::open`]).
    fn connect(d: &Direct, id: u64, store: &str, kind: Kind) -> Result<DrivenLink> {
        let cannot = |e: String| Error::connection(format!("cannot connect to {store}: {e}"));
        let addrs =
            std::net::ToSocketAddrs::to_socket_addrs(&(d.host.as_str(), d.port)).map_err(|e| cannot(e.to_string()))?;
        let mut last = "no address".to_owned();
        let mut sock = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, d.connect_timeout) {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(e) => last = e.to_string(),
            }
        }
        let mut sock = sock.ok_or_else(|| cannot(last))?;
        let setup = |s: &TcpStream| -> io::Result<()> {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(d.connect_timeout))?;
            s.set_write_timeout(Some(d.connect_timeout))
        };
        setup(&sock).map_err(|e| cannot(e.to_string()))?;
        let mut hello = Vec::new();
        let mut asked = 0;
        if let Some(password) = &d.password {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = &d.user {
                auth.arg(user);
            }
            auth.arg(password).write_packed_command(&mut hello);
            asked += 1;
        }
        if d.db != 0 {
            redis::cmd("SELECT").arg(d.db).write_packed_command(&mut hello);
            asked += 1;
        }
        // Named, so that `CLIENT LIST` tells it from the multiplexed connection (its
        // answer may be a refusal under a strict ACL: that one is not fatal).
        let name = match kind {
            Kind::Loop => NAME,
            Kind::Own => OWN_NAME,
            Kind::Task => TASK_NAME,
        };
        redis::cmd("CLIENT").arg("SETNAME").arg(name).write_packed_command(&mut hello);
        asked += 1;
        let mut login = || -> std::result::Result<(), String> {
            sock.write_all(&hello).map_err(why)?;
            let mut got = Vec::new();
            let mut buf = [0u8; 512];
            let mut answers = 0;
            while answers < asked {
                let n = sock.read(&mut buf).map_err(why)?;
                if n == 0 {
                    return Err("the server closed the connection".to_owned());
                }
                got.extend_from_slice(&buf[..n]);
                while let Some(len) = frame_len(&got)? {
                    let v = redis::parse_redis_value(&got[..len]).map_err(|e| e.to_string())?;
                    got.drain(..len);
                    answers += 1;
                    // The server's own words (`WRONGPASS …`) hold no password. The name's
                    // refusal is not fatal, unless it says a password is missing (`NOAUTH`):
                    // then no command would be taken either.
                    match v.extract_error() {
                        Err(e) if answers < asked || e.code() == Some("NOAUTH") => return Err(e.to_string()),
                        _ => {}
                    }
                }
            }
            Ok(())
        };
        login().map_err(|said| super::refused_login_said(store, &said, false).unwrap_or_else(|| cannot(said)))?;
        let ready = |s: &TcpStream| -> io::Result<()> {
            s.set_read_timeout(None)?;
            s.set_write_timeout(None)?;
            s.set_nonblocking(true)
        };
        ready(&sock).map_err(|e| cannot(e.to_string()))?;
        #[cfg(unix)]
        let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
        #[cfg(not(unix))]
        let fd = -1;
        Ok(DrivenLink(Arc::new(Shared {
            store: id,
            timeout: d.timeout,
            db: d.db,
            fd,
            own: kind == Kind::Own,
            #[cfg(unix)]
            tasks: std::sync::OnceLock::new(),
            #[cfg(unix)]
            spin: task::Spin::default(),
            io: Mutex::new(Io {
                sock,
                alive: true,
                out: Vec::new(),
                inbuf: Vec::new(),
                rbuf: vec![0; 16 * 1024].into_boxed_slice(),
                waiting: VecDeque::new(),
                parked: Vec::new(),
                reader: 0,
                writer: 0,
            }),
        })))
    }

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
