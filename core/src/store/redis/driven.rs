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

use crate::sync::LockExt;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::{Cmd, RedisError, RedisResult, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// The connection name of every driven link (`CLIENT SETNAME`).
pub(super) const NAME: &str = "baton-driven";

/// What a plain `redis://` server link needs to log in (kept by the store; never printed).
#[derive(Clone)]
pub(super) struct Direct {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) user: Option<String>,
    pub(super) password: Option<String>,
    pub(super) db: i64,
    pub(super) connect_timeout: Duration,
    pub(super) timeout: Duration,
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
    /// The store's request counter: identifies the store this link serves, and counts.
    trips: Arc<AtomicU64>,
    timeout: Duration,
    db: i64,
    fd: i32,
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
}

enum Waiting {
    One(oneshot::Sender<RedisResult<Value>>),
    /// A pipeline: `skip` answers dropped, then `left` kept.
    Many {
        skip: usize,
        left: usize,
        got: Vec<Value>,
        tx: oneshot::Sender<RedisResult<Vec<Value>>>,
    },
}

/// An answer for the head of the queue, sent once the lock is let go (a send wakes a task).
enum Done {
    One(oneshot::Sender<RedisResult<Value>>, RedisResult<Value>),
    Many(oneshot::Sender<RedisResult<Vec<Value>>>, RedisResult<Vec<Value>>),
}

impl Done {
    fn send(self) {
        // A receiver gone is a caller that stopped waiting: its answer is dropped.
        match self {
            Done::One(tx, r) => drop(tx.send(r)),
            Done::Many(tx, r) => drop(tx.send(r)),
        }
    }
}

fn lock(m: &Mutex<Io>) -> std::sync::MutexGuard<'_, Io> {
    m.locked()
}

fn dropped(why: &str) -> RedisError {
    RedisError::from(io::Error::new(io::ErrorKind::ConnectionAborted, format!("connection lost: {why}")))
}

thread_local! {
    /// The links installed on this thread (one per client, usually none or one).
    static HERE: RefCell<Vec<DrivenLink>> = const { RefCell::new(Vec::new()) };
}

/// The live link installed on this thread for the store counting on `trips`.
pub(super) fn here(trips: &Arc<AtomicU64>) -> Option<DrivenLink> {
    HERE.with(|h| h.borrow().iter().find(|l| Arc::ptr_eq(&l.0.trips, trips) && l.is_alive()).cloned())
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
            .map(|w| match w {
                Waiting::One(tx) => Done::One(tx, Err(dropped(why))),
                Waiting::Many { tx, .. } => Done::Many(tx, Err(dropped(why))),
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

    /// Hands every whole answer in `inbuf` to the head of the queue.
    fn answers(&mut self, done: &mut Vec<Done>) -> std::result::Result<(), String> {
        let mut at = 0;
        while let Some(len) = frame_len(&self.inbuf[at..])? {
            let v = parse(&self.inbuf[at..at + len])?;
            at += len;
            match self.waiting.front_mut() {
                None => return Err("an answer nobody asked for".to_owned()),
                Some(Waiting::One(_)) => {
                    let Some(Waiting::One(tx)) = self.waiting.pop_front() else { unreachable!() };
                    done.push(Done::One(tx, v.extract_error()));
                }
                Some(Waiting::Many { skip, left, got, .. }) => {
                    if *skip > 0 {
                        *skip -= 1;
                    } else {
                        got.push(v);
                        *left -= 1;
                    }
                    if *skip == 0 && *left == 0 {
                        let Some(Waiting::Many { tx, got, .. }) = self.waiting.pop_front() else { unreachable!() };
                        done.push(Done::Many(tx, Ok(got)));
                    }
                }
            }
        }
        self.inbuf.drain(..at);
        Ok(())
    }
}

/// The value of one whole answer; an integer (the lock scripts' usual answer) without the
/// general parser.
fn parse(frame: &[u8]) -> std::result::Result<Value, String> {
    if let [b':', digits @ .., b'\r', b'\n'] = frame
        && let Some(n) = std::str::from_utf8(digits).ok().and_then(|s| s.parse().ok())
    {
        return Ok(Value::Int(n));
    }
    redis::parse_redis_value(frame).map_err(|e| e.to_string())
}

/// The length of the RESP answer at the start of `b`: `None` while it is incomplete.
fn frame_len(b: &[u8]) -> std::result::Result<Option<usize>, String> {
    let Some(first) = b.first() else { return Ok(None) };
    let Some(cr) = b.windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
    let head = cr + 2;
    let n = || -> std::result::Result<i64, String> {
        std::str::from_utf8(&b[1..cr]).ok().and_then(|s| s.parse().ok()).ok_or_else(|| "a bad length".to_owned())
    };
    match first {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(head)),
        b'$' | b'!' | b'=' => match usize::try_from(n()?) {
            Err(_) => Ok(Some(head)), // `$-1`: nil
            Ok(len) => {
                let end = head + len + 2;
                Ok((b.len() >= end).then_some(end))
            }
        },
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let Ok(items) = usize::try_from(n()?) else { return Ok(Some(head)) };
            let items = if matches!(first, b'%' | b'|') { items * 2 } else { items };
            let mut at = head;
            for _ in 0..items {
                match frame_len(&b[at..])? {
                    Some(len) => at += len,
                    None => return Ok(None),
                }
            }
            Ok(Some(at))
        }
        other => Err(format!("an answer of unknown type {:?}", *other as char)),
    }
}

impl DrivenLink {
    /// Connects and logs in (on the runtime: the connect must not block the caller's loop).
    pub(super) async fn open(d: &Direct, trips: Arc<AtomicU64>, store: &str) -> Result<DrivenLink> {
        let cannot = |e: String| Error::connection(format!("cannot connect to {store}: {e}"));
        let connect = tokio::net::TcpStream::connect((d.host.as_str(), d.port));
        let mut sock = tokio::time::timeout(d.connect_timeout, connect)
            .await
            .map_err(|_| cannot("timed out".to_owned()))?
            .map_err(|e| cannot(e.to_string()))?;
        sock.set_nodelay(true).map_err(|e| cannot(e.to_string()))?;
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
        redis::cmd("CLIENT").arg("SETNAME").arg(NAME).write_packed_command(&mut hello);
        asked += 1;
        let login = async {
            sock.write_all(&hello).await.map_err(|e| e.to_string())?;
            let mut got = Vec::new();
            let mut buf = [0u8; 512];
            let mut answers = 0;
            while answers < asked {
                let n = sock.read(&mut buf).await.map_err(|e| e.to_string())?;
                if n == 0 {
                    return Err("the server closed the connection".to_owned());
                }
                got.extend_from_slice(&buf[..n]);
                while let Some(len) = frame_len(&got)? {
                    let v = redis::parse_redis_value(&got[..len]).map_err(|e| e.to_string())?;
                    got.drain(..len);
                    answers += 1;
                    // The server's own words (`WRONGPASS …`) hold no password.
                    if answers < asked {
                        v.extract_error().map_err(|e| e.to_string())?;
                    }
                }
            }
            Ok::<_, String>(())
        };
        tokio::time::timeout(d.connect_timeout, login)
            .await
            .map_err(|_| cannot("timed out".to_owned()))?
            .map_err(cannot)?;
        let sock = sock.into_std().map_err(|e| cannot(e.to_string()))?;
        sock.set_nonblocking(true).map_err(|e| cannot(e.to_string()))?;
        #[cfg(unix)]
        let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
        #[cfg(not(unix))]
        let fd = -1;
        Ok(DrivenLink(Arc::new(Shared {
            trips,
            timeout: d.timeout,
            db: d.db,
            fd,
            io: Mutex::new(Io {
                sock,
                alive: true,
                out: Vec::new(),
                inbuf: Vec::new(),
                rbuf: vec![0; 16 * 1024].into_boxed_slice(),
                waiting: VecDeque::new(),
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
        let (done, alive) = {
            let mut io = lock(&self.0.io);
            let done = io.write_out();
            (done, io.alive)
        };
        done.into_iter().for_each(Done::send);
        alive
    }

    /// The socket is readable: reads what is there and hands out every whole answer (each
    /// wakes the task waiting for it). False once the link is dead. It may stop reading
    /// once the socket looks drained: watch the socket level-triggered (libuv does), or
    /// clear an edge-triggered readiness before calling (as `AsyncFd` users do).
    pub fn on_readable(&self) -> bool {
        let mut done = Vec::new();
        let alive = {
            let mut guard = lock(&self.0.io);
            let io = &mut *guard;
            let failed = loop {
                if !io.alive {
                    break None;
                }
                match io.sock.read(&mut io.rbuf) {
                    Ok(0) => break Some("the server closed the connection".to_owned()),
                    Ok(n) => {
                        io.inbuf.extend_from_slice(&io.rbuf[..n]);
                        // Short: the socket is drained (one `recv` a call, not two); the
                        // loop watches it level-triggered, so later bytes call again.
                        if n < io.rbuf.len() {
                            break None;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break None,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break Some(e.to_string()),
                }
            };
            // Answers read before a failure still go to their askers.
            if let Err(why) = io.answers(&mut done) {
                done.extend(io.kill(&why));
            }
            if let Some(why) = failed {
                done.extend(io.kill(&why));
            }
            io.alive
        };
        done.into_iter().for_each(Done::send);
        alive
    }

    /// Closes the connection (pending requests fail with a connection error).
    pub fn close(&self) {
        let done = lock(&self.0.io).kill("the client closed it");
        done.into_iter().for_each(Done::send);
    }

    /// Queues `bytes` for the answers `w` waits for, and writes at once.
    fn enqueue(&self, bytes: impl FnOnce(&mut Vec<u8>), w: Waiting) -> RedisResult<()> {
        let done = {
            let mut io = lock(&self.0.io);
            if !io.alive {
                return Err(dropped("the link failed before"));
            }
            bytes(&mut io.out);
            io.waiting.push_back(w);
            io.write_out()
        };
        done.into_iter().for_each(Done::send);
        Ok(())
    }

    async fn answer<T>(&self, rx: oneshot::Receiver<RedisResult<T>>) -> RedisResult<T> {
        match tokio::time::timeout(self.0.timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(dropped("the link was dropped")),
            Err(_) => Err(RedisError::from(io::Error::new(io::ErrorKind::TimedOut, "no answer in time"))),
        }
    }

    pub(super) async fn request(&self, cmd: &Cmd) -> RedisResult<Value> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(|out| cmd.write_packed_command(out), Waiting::One(tx))?;
        self.answer(rx).await
    }

    pub(super) async fn request_many(
        &self,
        pipe: &redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let (tx, rx) = oneshot::channel();
        let w = Waiting::Many { skip: offset, left: count, got: Vec::with_capacity(count), tx };
        if offset + count == 0 {
            return Ok(Vec::new());
        }
        self.enqueue(|out| out.extend_from_slice(&pipe.get_packed_pipeline()), w)?;
        self.answer(rx).await
    }
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use super::{frame_len, parse};

    #[test]
    fn frames_are_measured_whole_or_not_at_all() {
        assert_eq!(frame_len(b"+OK\r\n"), Ok(Some(5)));
        assert_eq!(frame_len(b"+OK\r"), Ok(None));
        assert_eq!(frame_len(b"$-1\r\n"), Ok(Some(5)));
        assert_eq!(frame_len(b"$3\r\nabc\r\n:1\r\n"), Ok(Some(9)));
        assert_eq!(frame_len(b"$3\r\nab"), Ok(None));
        assert_eq!(frame_len(b"*2\r\n:1\r\n$1\r\nx\r\n"), Ok(Some(15)));
        assert_eq!(frame_len(b"*2\r\n:1\r\n$1\r\n"), Ok(None));
        assert_eq!(frame_len(b"*-1\r\n"), Ok(Some(5)));
        assert!(frame_len(b"?x\r\n").is_err());
        assert!(frame_len(b"$x\r\n").is_err());
    }

    #[test]
    fn integers_parse_directly_and_the_rest_as_before() {
        assert_eq!(parse(b":42\r\n"), Ok(Value::Int(42)));
        assert_eq!(parse(b":-7\r\n"), Ok(Value::Int(-7)));
        assert_eq!(
            parse(b"*2\r\n:1\r\n$1\r\nx\r\n"),
            Ok(Value::Array(vec![Value::Int(1), Value::BulkString(b"x".to_vec())]))
        );
        assert_eq!(parse(b"$-1\r\n"), Ok(Value::Nil));
        assert!(parse(b":x\r\n").is_err());
    }
}
