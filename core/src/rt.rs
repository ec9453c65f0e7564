//! The runtime below every binding: one captured tokio handle per client, and one shared
//! process-wide runtime for callers that have none (Python, the JVM, C).
//!
//! Background work (watchdogs, the release of a dropped guard) is spawned through the
//! captured handle, never bare `tokio::spawn`, because `Drop` may run on a thread with no
//! runtime (a GC finalizer, a JVM cleaner).

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;

use crate::error::{Error, Result};

/// A handle on the runtime a client spawns its background work on.
#[derive(Debug, Clone)]
pub(crate) struct Rt(Handle);

impl Rt {
    /// The caller's runtime if there is one, else the shared one.
    pub(crate) fn current() -> Rt {
        Rt(Handle::try_current().unwrap_or_else(|_| global().handle().clone()))
    }

    pub(crate) fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.0.spawn(fut)
    }
}

/// The shared runtime: built on first use, multi-threaded, at most 4 workers named
/// `baton-rt`.
pub fn global() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("baton-rt")
            .enable_all()
            .build()
            .expect("cannot start baton's runtime: the OS refused threads")
    })
}

/// Runs `fut` on the shared runtime and awaits it from any executor. Dropping the returned
/// future aborts `fut` (a plain `JoinHandle` would detach it and keep acquiring), and a
/// panic inside becomes a `Backend` error instead of crossing a language boundary.
pub fn run<T, F>(fut: F) -> impl Future<Output = Result<T>> + Send
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let handle = AbortOnDrop(global().spawn(fut));
    async move {
        let mut handle = handle;
        match (&mut handle.0).await {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(Error::backend(format!("internal error: {}", panic_message(e)))),
            Err(_) => Err(Error::backend("internal error: task cancelled")),
        }
    }
}

fn panic_message(e: tokio::task::JoinError) -> String {
    let p = e.into_panic();
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned())
}

/// Aborts the task when dropped.
#[derive(Debug)]
pub(crate) struct AbortOnDrop<T>(pub(crate) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
