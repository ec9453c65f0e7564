//! Async bridging: every call runs on the core's shared runtime
//! (`baton::rt::global()`). The blocking API waits with the GIL released and lets Ctrl-C
//! through; the asyncio API hands Python an awaitable resolved on the caller's loop.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3_async_runtimes::TaskLocals;
use pyo3_async_runtimes::generic::{ContextExt, JoinError, Runtime};

use crate::errors;

/// How often a blocking wait reattaches to Python to run signal handlers.
const TICK: Duration = Duration::from_millis(50);

/// Blocks on `fut`, polled on this thread, with the GIL released; every [`TICK`]
/// reattaches so Python can raise `KeyboardInterrupt` (or whatever a signal handler
/// raises), which ends the wait with `fut` unfinished.
fn block<F>(py: Python<'_>, fut: &mut Pin<Box<F>>) -> PyResult<F::Output>
where
    F: Future + Send + ?Sized,
    F::Output: Send,
{
    loop {
        // The timer is made inside `block_on`, where the runtime's context is entered.
        let ticked = py
            .detach(|| here(|| baton::rt::global().block_on(async { tokio::time::timeout(TICK, fut.as_mut()).await })));
        match ticked {
            Ok(out) => return Ok(out),
            Err(_) => py.check_signals()?,
        }
    }
}

/// Runs `f` (a wait of this thread) so that a plain `redis://` store's requests are
/// written and answered on this thread, over a connection of its own (feature
/// `own-link`: `baton::ffi::drive_here`; no runtime worker between the socket and the
/// caller). Other stores' I/O is driven by the shared runtime's workers.
fn here<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "own-link")]
    return baton::ffi::drive_here(f);
    #[cfg(not(feature = "own-link"))]
    f()
}

/// Runs `fut` on this thread and waits for it (GIL released). An exception from a signal
/// handler cancels `fut`: use this for every cancel-safe call (acquire, waits, queries).
/// `in_context` drops a cancelled `fut` inside the shared runtime's context, which what it
/// holds may need (a pooled SQL connection returns itself to its pool with a spawn).
pub(crate) fn wait<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    block(py, &mut Box::pin(baton::rt::in_context(fut)))?.map_err(errors::to_py)
}

/// Like [`wait`], but an interrupted wait leaves `fut` running to completion in the
/// background, on the shared runtime: for release and close, whose half-done state would
/// help no one.
pub(crate) fn wait_detached<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    let mut fut = Box::pin(baton::rt::in_context(fut));
    match block(py, &mut fut) {
        Ok(out) => out.map_err(errors::to_py),
        Err(interrupted) => {
            drop(baton::rt::global().spawn(fut));
            Err(interrupted)
        }
    }
}

/// Spawns `fut` on the shared runtime; dropping the returned future does not stop it.
pub(crate) fn detached<T, F>(fut: F) -> impl Future<Output = baton::Result<T>> + Send + 'static
where
    T: Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    let handle = baton::rt::global().spawn(fut);
    async move { handle.await.unwrap_or_else(|e| Err(internal(&e))) }
}

fn internal(e: &tokio::task::JoinError) -> baton::Error {
    baton::Error::new(baton::ErrorKind::Backend, format!("internal error: {e}"))
}

/// An asyncio awaitable for `fut`, run on the shared runtime and resolved on the running
/// loop. Cancelling the awaiting task drops `fut` (acquire is cancel-safe).
pub(crate) fn awaitable<'py, T, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    let fut = baton::rt::run(fut);
    pyo3_async_runtimes::generic::future_into_py::<Shared, _, T>(py, async move { fut.await.map_err(errors::to_py) })
}

/// [`awaitable`] for work that must finish even if the awaiting task is cancelled.
pub(crate) fn awaitable_detached<'py, T, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    let fut = detached(fut);
    pyo3_async_runtimes::generic::future_into_py::<Shared, _, T>(py, async move { fut.await.map_err(errors::to_py) })
}

/// `pyo3_async_runtimes`' view of the core's shared runtime. `global()` is looked up on
/// every spawn, so a forked child uses its own fresh runtime.
pub(crate) struct Shared;

pub(crate) struct Joined(tokio::task::JoinError);

impl JoinError for Joined {
    fn is_panic(&self) -> bool {
        self.0.is_panic()
    }

    fn into_panic(self) -> Box<dyn std::any::Any + Send + 'static> {
        self.0.into_panic()
    }
}

type Handle = Pin<Box<dyn Future<Output = Result<(), Joined>> + Send>>;

impl Runtime for Shared {
    type JoinError = Joined;
    type JoinHandle = Handle;

    fn spawn<F>(fut: F) -> Handle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let h = baton::rt::global().spawn(exit_gate::Gated(Box::pin(fut)));
        Box::pin(async move { h.await.map_err(Joined) })
    }

    fn spawn_blocking<F>(f: F) -> Handle
    where
        F: FnOnce() + Send + 'static,
    {
        let h = baton::rt::global().spawn_blocking(|| {
            if let Some(_pass) = exit_gate::pass() {
                f();
            }
        });
        Box::pin(async move { h.await.map_err(Joined) })
    }
}

/// The only code that calls into Python from the runtime's threads is what
/// `pyo3_async_runtimes` spawns (it resolves asyncio futures). It must stop before the
/// interpreter finalizes: CPython ≤ 3.13 ends a thread that then waits for the GIL with
/// `pthread_exit`, whose forced unwind cannot pass Rust frames and aborts the process.
/// An `atexit` hook (registered at import) closes the gate and waits, with the GIL
/// released, for the calls already inside it.
pub(crate) mod exit_gate {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Condvar, Mutex};
    use std::task::{Context, Poll};
    use std::time::Duration;

    use baton::ffi::LockExt;
    use pyo3::prelude::*;

    static CLOSED: AtomicBool = AtomicBool::new(false);
    static INSIDE: Mutex<usize> = Mutex::new(0);
    static LEFT: Condvar = Condvar::new();

    /// Leave to run Python-calling code; `None` once the interpreter is exiting.
    pub(crate) struct Pass(());

    pub(crate) fn pass() -> Option<Pass> {
        let mut n = INSIDE.locked();
        if CLOSED.load(Ordering::Acquire) {
            return None;
        }
        *n += 1;
        Some(Pass(()))
    }

    impl Drop for Pass {
        fn drop(&mut self) {
            let mut n = INSIDE.locked();
            *n -= 1;
            if *n == 0 {
                LEFT.notify_all();
            }
        }
    }

    /// A future polled only through the gate; once it is closed the task parks for good.
    pub(crate) struct Gated<F>(pub(crate) Pin<Box<F>>);

    impl<F: Future> Future for Gated<F> {
        type Output = F::Output;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            match pass() {
                Some(_pass) => self.0.as_mut().poll(cx),
                None => Poll::Pending,
            }
        }
    }

    /// `atexit` hook: close the gate, then let the calls inside it finish (bounded: a
    /// wedged call must not hang the exit).
    #[pyfunction]
    pub(crate) fn _close_exit_gate(py: Python<'_>) {
        let n = INSIDE.locked();
        CLOSED.store(true, Ordering::Release);
        drop(n);
        py.detach(|| {
            let n = INSIDE.locked();
            let _ = LEFT.wait_timeout_while(n, Duration::from_secs(5), |n| *n > 0);
        });
    }
}

impl ContextExt for Shared {
    /// The Rust futures of this binding never call back into Python, so they need no
    /// task-local event loop: the loop comes from `get_running_loop()` at the call.
    fn scope<F, R>(locals: TaskLocals, fut: F) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        drop(locals);
        Box::pin(fut)
    }

    fn get_task_locals() -> Option<TaskLocals> {
        None
    }
}

/// [`wait`] with the result converted to a Python object, so one method body can serve
/// the blocking and the asyncio class (see [`awaitable`]).
pub(crate) fn wait_py<'py, T, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    use pyo3::IntoPyObjectExt;
    wait(py, fut)?.into_bound_py_any(py)
}
