//! The runtime below every binding: one captured tokio handle per client, and one shared
//! process-wide runtime for callers that have none (Python, the JVM, C).
//!
//! Background work (watchdogs, the release of a dropped guard) is spawned through the
//! captured handle, never bare `tokio::spawn`, because `Drop` may run on a thread with no
//! runtime (a GC finalizer, a JVM cleaner).

use std::future::Future;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

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

/// The shared runtime, or null before first use and in a forked child.
static GLOBAL: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
/// Bumped in every forked child: clients from before the fork belong to the parent.
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

/// The shared runtime: built on first use, multi-threaded, at most 4 workers named
/// `baton-rt`. After `fork()` the child builds a fresh one (the parent's worker threads
/// do not exist there; the old runtime is leaked, as lancedb does), so Python's
/// `multiprocessing` with the fork start method works.
///
/// # Panics
/// If the OS refuses to start threads.
pub fn global() -> &'static Runtime {
    let p = GLOBAL.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: set only from `Box::leak`ed runtimes, which are never freed.
        return unsafe { &*p };
    }
    #[cfg(unix)]
    register_fork_hook();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    // The one panic of the runtime seam, documented above: without threads there is no
    // runtime to report an error on.
    #[allow(clippy::expect_used)]
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("baton-rt")
        .enable_all()
        .build()
        .expect("cannot start baton's runtime: the OS refused threads");
    let fresh = Box::into_raw(Box::new(rt));
    match GLOBAL.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just leaked above.
        Ok(_) => unsafe { &*fresh },
        Err(winner) => {
            // Another thread built one first: stop ours without blocking (this may run
            // inside an async context, where dropping a runtime would panic).
            // SAFETY: `fresh` came from Box::into_raw and was never shared.
            unsafe { Box::from_raw(fresh) }.shutdown_background();
            // SAFETY: as above, runtimes in GLOBAL are never freed.
            unsafe { &*winner }
        }
    }
}

/// How many forks separate this process from the one that started (0 in the original).
pub(crate) fn fork_generation() -> u64 {
    FORK_GENERATION.load(Ordering::Acquire)
}

#[cfg(unix)]
fn register_fork_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn in_child() {
        // Only atomics here: the child of a multi-threaded process may not allocate.
        GLOBAL.store(std::ptr::null_mut(), Ordering::Release);
        FORK_GENERATION.fetch_add(1, Ordering::AcqRel);
    }
    // SAFETY: registers a handler that only touches atomics.
    ONCE.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(in_child));
    });
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

/// Polls `fut` where it is awaited (no hop to the shared runtime), turning a panic inside
/// into a `Backend` error: for a binding whose own runtime already polls its calls on a
/// worker thread (napi-rs), where [`run`]'s extra hop would cost two thread wake-ups.
pub fn catch_panics<T, F>(fut: F) -> impl Future<Output = Result<T>> + Send
where
    F: Future<Output = Result<T>> + Send,
{
    CatchPanics(Box::pin(fut))
}

struct CatchPanics<F>(std::pin::Pin<Box<F>>);

/// Polls `fut` where it is awaited, inside the shared runtime's context (its timers, I/O
/// and spawns then work from any thread), turning a panic inside into a `Backend` error;
/// dropped (a cancelled call), `fut` is dropped in that context too. For a binding whose
/// caller polls from its own threads (uniffi's foreign futures: the JVM), where [`run`]'s
/// hop onto a worker and back would cost two thread wake-ups per call: a call that needs
/// no I/O (`memory://`) completes in its first poll, and one that does is woken by the
/// runtime's I/O driver as with `run`.
pub fn in_context<T, F>(fut: F) -> impl Future<Output = Result<T>> + Send
where
    F: Future<Output = Result<T>> + Send,
{
    InContext(Some(Box::pin(fut)))
}

struct InContext<F: Future>(Option<std::pin::Pin<Box<F>>>);

/// Polls `fut` on the calling thread until it completes, blocking that thread, in the
/// shared runtime's context (its workers drive the sockets); a panic inside becomes a
/// `Backend` error. For a host thread's blocking call that needs one store answer and no
/// wait (the JVM's `tryAcquireBlocking`, a release): against awaiting [`in_context`]
/// through the host's own future machinery, the answer wakes this thread directly. On a
/// thread that runs an async runtime it is a `Backend` error, not a panic: blocking there
/// would stall that runtime.
pub fn block_on<T, F>(fut: F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    if Handle::try_current().is_ok() {
        return Err(Error::backend(
            "a blocking call on an async runtime's thread: use the asynchronous form of this call there",
        ));
    }
    global().block_on(CatchPanics(Box::pin(fut)))
}

impl<T, F: Future<Output = Result<T>>> Future for InContext<F> {
    type Output = Result<T>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<T>> {
        let Some(inner) = self.0.as_mut() else {
            return std::task::Poll::Ready(Err(Error::backend("polled after completion")));
        };
        let _in = global().enter();
        let out = poll_catching(inner.as_mut(), cx);
        if out.is_ready() {
            // Dropped here, in the runtime's context.
            self.0 = None;
        }
        out
    }
}

impl<F: Future> Drop for InContext<F> {
    fn drop(&mut self) {
        if let Some(fut) = self.0.take() {
            let _in = global().enter();
            // A panic while dropping must not unwind into the caller's language either.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(fut)));
        }
    }
}

impl<T, F: Future<Output = Result<T>>> Future for CatchPanics<F> {
    type Output = Result<T>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<T>> {
        poll_catching(self.0.as_mut(), cx)
    }
}

/// Polls `fut` once, a panic inside becoming a `Backend` error.
fn poll_catching<T, F: Future<Output = Result<T>>>(
    fut: std::pin::Pin<&mut F>,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<Result<T>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
        Ok(p) => p,
        Err(p) => std::task::Poll::Ready(Err(Error::backend(format!("internal error: {}", panic_text(&*p))))),
    }
}

fn panic_message(e: tokio::task::JoinError) -> String {
    panic_text(&*e.into_panic())
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
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

#[cfg(all(test, unix))]
mod tests {
    use std::time::{Duration, Instant};

    // An arrow up to the client, on purpose: `block_on` is tested on the calls it serves.
    use crate::client::Client;
    use crate::error::ErrorKind;

    /// `block_on` answers on the calling thread, turns a panic into `Backend`, and refuses
    /// (an error, not a panic) on a thread that runs a runtime.
    #[test]
    fn block_on_answers_and_never_panics() {
        let client = super::block_on(Client::connect("memory://block-on")).unwrap();
        let guard = super::block_on(client.lock("x").try_acquire()).unwrap().expect("free");
        assert!(super::block_on(client.lock("x").try_acquire()).unwrap().is_none());
        super::block_on(guard.release()).unwrap();
        let e = super::block_on(async { if true { panic!("boom") } else { Ok(()) } }).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Backend);
        assert!(e.to_string().contains("boom"), "{e}");
        let inside = super::global().block_on(async { super::block_on(async { Ok(()) }) });
        assert_eq!(inside.unwrap_err().kind(), ErrorKind::Backend);
    }

    /// After fork() the child gets a working runtime of its own, and a client made
    /// before the fork reports `Closed` there instead of hanging on the parent's threads.
    #[test]
    fn forked_child_gets_a_fresh_runtime() {
        let client = super::global().block_on(Client::connect("memory://fork-parent")).unwrap();
        // SAFETY: the child only runs baton code and then `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                super::global().block_on(async {
                    let e = client.lock("x").try_acquire().await.unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::Closed);
                    let fresh = Client::connect("memory://fork-child").await.unwrap();
                    fresh.lock("x").acquire().await.unwrap().release().await.unwrap();
                })
            }))
            .is_ok();
            // SAFETY: leaves the child without running the parent's test harness.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        // Bounded wait: a hung child (the bug this guards against) is killed after 20 s.
        let started = Instant::now();
        let mut status = 0;
        loop {
            // SAFETY: plain waitpid on our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if started.elapsed() > Duration::from_secs(20) {
                // SAFETY: killing our own child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("the forked child hung");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child failed: status {status}");
    }
}
