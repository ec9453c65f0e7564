//! Fault points between a scheme's steps, and what the harness makes happen there: the
//! holder crashes (its step sequence ends), or pauses at a [`Gate`] until the harness
//! lets it go (a GC pause, made deterministic: no sleep-and-hope).

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use baton::ffi::LockExt;
use baton::{Error, ErrorKind, Result};

/// A place between two commands of a scheme's acquire or release.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Point {
    /// `setnx-expire`: the `SETNX` succeeded, the `EXPIRE` is not sent yet.
    AfterSetnx,
    /// `getset-timestamp`: the expired timestamp was read, the `GETSET` is not sent yet.
    AfterGet,
    /// `set-nx-px-owned`: `GET` returned the holder's own value, the `DEL` is not sent yet.
    BeforeDelete,
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Point::AfterSetnx => "between SETNX and EXPIRE",
            Point::AfterGet => "between GET and GETSET",
            Point::BeforeDelete => "between GET and DEL",
        })
    }
}

#[derive(Clone)]
enum Fault {
    Crash,
    Pause(Gate),
}

/// The faults armed on one client. Each fires once, the first time its point is reached.
#[derive(Clone, Default)]
pub struct Hooks(Arc<Mutex<Vec<(Point, Fault)>>>);

impl Hooks {
    /// No fault anywhere.
    pub fn none() -> Hooks {
        Hooks::default()
    }

    /// The holder crashes when it reaches `point`.
    pub fn crash_at(point: Point) -> Hooks {
        let h = Hooks::default();
        h.arm(point, Fault::Crash);
        h
    }

    /// The holder stops at `point` until the returned gate is opened.
    pub fn pause_at(point: Point) -> (Hooks, Gate) {
        let (h, gate) = (Hooks::default(), Gate::default());
        h.arm(point, Fault::Pause(gate.clone()));
        (h, gate)
    }

    fn arm(&self, point: Point, fault: Fault) {
        self.0.locked().push((point, fault));
    }

    /// Called by a scheme between two steps: returns at once unless a fault is armed here.
    ///
    /// # Errors
    /// `Backend` ("crashed at …") when the holder is to crash here: the scheme must return
    /// it without sending anything more.
    pub(crate) async fn at(&self, point: Point) -> Result<()> {
        let fault = {
            let mut armed = self.0.locked();
            armed.iter().position(|(p, _)| *p == point).map(|i| armed.remove(i).1)
        };
        match fault {
            None => Ok(()),
            Some(Fault::Crash) => Err(crashed(point)),
            Some(Fault::Pause(gate)) => {
                gate.reached.notify_one();
                gate.open.notified().await;
                Ok(())
            }
        }
    }
}

/// The error a scheme step returns when the lab crashed the holder at `point`.
pub(crate) fn crashed(point: Point) -> Error {
    Error::new(ErrorKind::Backend, format!("lab: the holder crashed {point}"))
}

/// Where a paused holder waits. `Notify::notify_one` keeps a permit, so neither side can
/// miss the other, whichever comes first.
#[derive(Clone, Default)]
pub struct Gate {
    reached: Arc<Notify>,
    open: Arc<Notify>,
}

impl Gate {
    /// Resolves once the holder stands at the gate.
    pub async fn reached(&self) {
        self.reached.notified().await;
    }

    /// Lets the holder go on.
    pub fn open(&self) {
        self.open.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_fault_fires_once_where_it_is_armed() {
        let crash = Hooks::crash_at(Point::AfterSetnx);
        crash.at(Point::BeforeDelete).await.unwrap();
        assert!(crash.at(Point::AfterSetnx).await.unwrap_err().message().contains("between SETNX and EXPIRE"));
        crash.at(Point::AfterSetnx).await.unwrap();

        let (pause, gate) = Hooks::pause_at(Point::BeforeDelete);
        let holder = tokio::spawn(async move { pause.at(Point::BeforeDelete).await });
        gate.reached().await;
        assert!(!holder.is_finished());
        gate.open();
        holder.await.unwrap().unwrap();
    }

    #[test]
    fn a_jumped_clock_runs_ahead() {
        let (c, real) = (crate::clock::Clock::system(), crate::clock::Clock::system());
        c.jump(60_000);
        let ahead = c.now_ms() - real.now_ms();
        assert!((59_000..=61_000).contains(&ahead), "{ahead}");
    }
}
