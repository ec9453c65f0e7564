//! A short busy-poll window on napi's worker around the hot calls (acquire, release).
//!
//! A baton call from JavaScript crosses threads: the JavaScript thread hands the call to
//! napi's worker, the worker waits on the store's socket, then hands the answer back. On
//! an idle machine each hand-over wakes a sleeping thread, and a wake-up costs 15–30 µs
//! here — more than the client's own work on a call (`bench/bench.mjs`). node-redlock,
//! whose I/O runs on the JavaScript thread, pays one wake-up a call (its socket's); baton
//! paid three. While a hot call is in flight, and for a short window after one settles
//! (the caller's next call usually follows at once: a release after its acquire), a
//! spinner task keeps the worker awake instead: it yields in a loop, so the worker keeps
//! running the calls' tasks and polling the sockets without sleeping in between (tokio
//! polls I/O without blocking while a yielded task is pending). The JavaScript thread's
//! own wake-up stays, leaving one a call, as with node-redlock.
//!
//! The cost is a busy core for at most the window after the last hot call, and for at
//! most [`MAX_SPIN`] while a call waits on the store (a contended acquire then sleeps as
//! before). `BATON_NODE_BUSY_POLL_US` sets the window (default [`DEFAULT_WINDOW_US`];
//! `0` turns busy-polling off), read once per process (when the first hot call is made).

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The window after the last hot call settles, in µs, unless the environment says else.
const DEFAULT_WINDOW_US: u64 = 200;

/// How long the worker spins without any call starting or settling (a call waiting on a
/// contended lock, or a slow store) before it goes back to sleeping.
const MAX_SPIN: Duration = Duration::from_millis(2);

struct Spin {
    /// `None`: busy-polling is off.
    window: Option<Duration>,
    origin: Instant,
    in_flight: AtomicUsize,
    /// ns after `origin` of the last call started or settled.
    last: AtomicU64,
    running: AtomicBool,
}

static SPIN: LazyLock<Spin> = LazyLock::new(|| {
    let us = std::env::var("BATON_NODE_BUSY_POLL_US").ok().and_then(|v| v.trim().parse::<u64>().ok());
    let us = us.unwrap_or(DEFAULT_WINDOW_US);
    Spin {
        window: (us > 0).then(|| Duration::from_micros(us)),
        origin: Instant::now(),
        in_flight: AtomicUsize::new(0),
        last: AtomicU64::new(0),
        running: AtomicBool::new(false),
    }
});

impl Spin {
    fn touch(&self) {
        self.last.store(self.origin.elapsed().as_nanos() as u64, Ordering::SeqCst);
    }

    fn quiet_for(&self) -> Duration {
        self.origin.elapsed().saturating_sub(Duration::from_nanos(self.last.load(Ordering::SeqCst)))
    }

    /// Whether the spinner should stop now.
    fn done(&self, window: Duration) -> bool {
        let quiet = self.quiet_for();
        quiet > MAX_SPIN || (self.in_flight.load(Ordering::SeqCst) == 0 && quiet > window)
    }
}

/// One hot call in flight, from its start on the JavaScript thread until dropped (when
/// it settles, or if its task is dropped unfinished).
pub(crate) struct InFlight(bool);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0 {
            SPIN.touch();
            SPIN.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A hot call starts (on the JavaScript thread): starts the spinner unless it runs.
pub(crate) fn started() -> InFlight {
    let s = &*SPIN;
    let Some(window) = s.window else { return InFlight(false) };
    s.in_flight.fetch_add(1, Ordering::SeqCst);
    s.touch();
    if s.running.swap(true, Ordering::SeqCst) {
        return InFlight(true);
    }
    napi::bindgen_prelude::spawn(async move {
        loop {
            if s.done(window) {
                s.running.store(false, Ordering::SeqCst);
                // A call that started between the check and the store saw `running` set
                // and left the spinning to this task: take it back up.
                if s.done(window) || s.running.swap(true, Ordering::SeqCst) {
                    return;
                }
            }
            // Polite spinning: other threads runnable on this core (the store's server, the
            // JavaScript thread, other processes' workers) go first.
            std::thread::yield_now();
            tokio::task::yield_now().await;
        }
    });
    InFlight(true)
}
