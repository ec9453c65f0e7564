//! `Lock` and `FairLock` (one macro: they have the same methods), blocking and asyncio.

use std::time::Duration;

use baton::{FairLock as CoreFairLock, Lock as CoreLock};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::convert;
use crate::enter::{Acquiring, Blocks};
use crate::guard::{AsyncLockGuard, LockGuard};
use crate::inspect::Inspection;
use crate::runtime;

/// Acquire of a lock-like core handle, waiting at most `timeout` when given.
macro_rules! acquire_with {
    ($core:expr, $timeout:expr) => {
        async move {
            match $timeout {
                Some(t) => $core.acquire_timeout(t).await,
                None => $core.acquire().await,
            }
        }
    };
}

macro_rules! lock_classes {
    ($(#[$sm:meta])* $Sync:ident, $(#[$am:meta])* $Async:ident, $Core:ty) => {
        $(#[$sm])*
        #[pyclass(frozen, module = "baton")]
        pub(crate) struct $Sync {
            core: $Core,
            timeout: Option<Duration>,
            blocks: Blocks,
        }

        impl $Sync {
            pub(crate) fn new(py: Python<'_>, core: $Core, timeout: Option<Duration>) -> $Sync {
                $Sync { core, timeout, blocks: Blocks::new(py) }
            }
        }

        #[pymethods]
        impl $Sync {
            /// Waits until the lock is granted, at most `timeout` seconds (default: the
            /// handle's `timeout`, else no limit); raises `Timeout` after. The GIL is
            /// released while waiting, and Ctrl-C interrupts the wait, holding nothing.
            #[pyo3(signature = (timeout=None))]
            fn acquire(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<LockGuard> {
                let timeout = convert::seconds("timeout", timeout.as_ref())?.or(self.timeout);
                let core = self.core.clone();
                runtime::wait(py, acquire_with!(core, timeout)).map(LockGuard::new)
            }

            /// One attempt without waiting: the guard, or `None` when someone else holds it.
            fn try_acquire(&self, py: Python<'_>) -> PyResult<Option<LockGuard>> {
                let core = self.core.clone();
                runtime::wait(py, async move { core.try_acquire().await }).map(|g| g.map(LockGuard::new))
            }

            /// Holders, waiters and the last token of this lock on the store.
            fn inspect(&self, py: Python<'_>) -> PyResult<Inspection> {
                let core = self.core.clone();
                runtime::wait(py, async move { core.inspect().await }).map(Inspection::from)
            }

            /// The name this handle locks.
            #[getter]
            fn name(&self) -> &str {
                self.core.name()
            }

            /// The owner id grants of this handle are held under.
            #[getter]
            fn owner(&self) -> Option<&str> {
                self.core.owner()
            }

            /// Acquires (with the handle's `timeout`) and returns the guard.
            fn __enter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let guard = Bound::new(py, self.acquire(py, None)?)?;
                self.blocks.enter(guard.into_any())
            }

            /// Releases the guard the matching `__enter__` returned.
            #[pyo3(signature = (*exc))]
            fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
                self.blocks.exit(py, exc)
            }

            fn __repr__(&self) -> String {
                format!("<baton.{} {:?}>", stringify!($Sync), self.core.name())
            }
        }

        $(#[$am])*
        #[pyclass(frozen, module = "baton")]
        pub(crate) struct $Async {
            core: $Core,
            timeout: Option<Duration>,
            blocks: Blocks,
        }

        impl $Async {
            pub(crate) fn new(py: Python<'_>, core: $Core, timeout: Option<Duration>) -> $Async {
                $Async { core, timeout, blocks: Blocks::new(py) }
            }

            fn start(&self, timeout: Option<Duration>) -> crate::enter::Start {
                let core = self.core.clone();
                Box::new(move |py| {
                    let core = core.clone();
                    runtime::awaitable(py, async move { acquire_with!(core, timeout).await.map(AsyncLockGuard::new) })
                })
            }
        }

        #[pymethods]
        impl $Async {
            /// Acquires, waiting at most `timeout` seconds (default: the handle's `timeout`,
            /// else no limit; `Timeout` after). Await the result for the guard, or use it
            /// as `async with`. Cancelling the awaiting task cancels the acquire.
            #[pyo3(signature = (timeout=None))]
            fn acquire(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<Acquiring> {
                let timeout = convert::seconds("timeout", timeout.as_ref())?.or(self.timeout);
                Ok(Acquiring::new(py, self.start(timeout)))
            }

            /// One attempt without waiting: resolves to the guard, or `None` when busy.
            fn try_acquire<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = self.core.clone();
                runtime::awaitable(py, async move { Ok(core.try_acquire().await?.map(AsyncLockGuard::new)) })
            }

            /// Holders, waiters and the last token of this lock on the store.
            fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = self.core.clone();
                runtime::awaitable(py, async move { core.inspect().await.map(Inspection::from) })
            }

            /// The name this handle locks.
            #[getter]
            fn name(&self) -> &str {
                self.core.name()
            }

            /// The owner id grants of this handle are held under.
            #[getter]
            fn owner(&self) -> Option<&str> {
                self.core.owner()
            }

            fn __aenter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                self.blocks.enter_async((self.start(self.timeout))(py)?)
            }

            #[pyo3(signature = (*exc))]
            fn __aexit__<'py>(&self, py: Python<'py>, exc: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
                self.blocks.exit_async(py, exc)
            }

            fn __repr__(&self) -> String {
                format!("<baton.{} {:?}>", stringify!($Async), self.core.name())
            }
        }
    };
}

lock_classes!(
    /// A re-entrant exclusive lock handle with a watchdog lease (or a ttl) and a fencing
    /// token per grant. `with lock as guard:` acquires and releases.
    Lock,
    /// The asyncio form of `Lock`: `await lock.acquire()`, `async with lock as guard:`.
    AsyncLock,
    CoreLock
);

lock_classes!(
    /// A lock granted in request order; otherwise as `Lock`.
    FairLock,
    /// The asyncio form of `FairLock`.
    AsyncFairLock,
    CoreFairLock
);
