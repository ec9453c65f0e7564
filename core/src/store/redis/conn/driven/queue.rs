//! The link's socket and its answer queue: bytes written as the socket takes them, answers
//! read and handed, frame by frame, to the request at the head of the queue.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;

use redis::{RedisError, RedisResult, Value};
use tokio::sync::oneshot;

use super::resp::{frame_len, parse};
use crate::sync::LockExt;

pub(super) struct Io {
    /// Kept open until the link is dropped, dead or not: the caller's loop may still
    /// watch its descriptor, which must not be reused meanwhile.
    pub(super) sock: TcpStream,
    pub(super) alive: bool,
    /// Bytes not yet written.
    pub(super) out: Vec<u8>,
    /// Bytes read, not yet a whole answer.
    pub(super) inbuf: Vec<u8>,
    /// What each `read` fills (zeroed once, not on every read).
    pub(super) rbuf: Box<[u8]>,
    /// Who gets the next answers, in order.
    pub(super) waiting: VecDeque<Waiting>,
    /// A tasks' link: the tasks waiting for an answer, by waiter id (`task`).
    pub(super) parked: Vec<(u64, std::task::Waker)>,
    /// A tasks' link: the waiters whose wakers the reactor holds for reading and for
    /// writing (0: none).
    pub(super) reader: u64,
    pub(super) writer: u64,
}

/// A request waiting for its answer: who waits (on a tasks' link, the waiter's id; else 0)
/// and what for.
pub(super) struct Waiting {
    pub(super) waiter: u64,
    pub(super) want: Want,
}

pub(super) enum Want {
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
pub(super) struct Done {
    pub(super) waiter: u64,
    pub(super) answer: Answered,
}

pub(super) enum Answered {
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
pub(super) fn finish(io: std::sync::MutexGuard<'_, Io>, done: Vec<Done>, me: u64) {
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

pub(super) fn lock(m: &Mutex<Io>) -> std::sync::MutexGuard<'_, Io> {
    m.locked()
}

pub(super) fn dropped(why: &str) -> RedisError {
    RedisError::from(io::Error::new(io::ErrorKind::ConnectionAborted, format!("connection lost: {why}")))
}

impl Io {
    /// Fails every waiting request and closes the socket.
    pub(super) fn kill(&mut self, why: &str) -> Vec<Done> {
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
    pub(super) fn write_out(&mut self) -> Vec<Done> {
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
    pub(super) fn read_in(&mut self, done: &mut Vec<Done>) -> bool {
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
