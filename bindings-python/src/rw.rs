//! `RwLock`: many readers or one writer, blocking and asyncio.

use std::time::Duration;

use baton::RwLock as CoreRwLock;
use pyo3::prelude::*;

use crate::convert;
use crate::enter::{Acquiring, Start};
use crate::guard::{AsyncLockGuard, LockGuard};
use crate::inspect::Inspection;
use crate::runtime;

/// Which side of the lock a call takes.
#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

async fn take(core: CoreRwLock, side: Side, timeout: Option<Duration>) -> baton::Result<baton::LockGuard> {
    match (side, timeout) {
        (Side::Read, None) => core.read().await,
        (Side::Read, Some(t)) => core.read_timeout(t).await,
        (Side::Write, None) => core.write().await,
        (Side::Write, Some(t)) => core.write_timeout(t).await,
    }
}

async fn try_take(core: CoreRwLock, side: Side) -> baton::Result<Option<baton::LockGuard>> {
    match side {
        Side::Read => core.try_read().await,
        Side::Write => core.try_write().await,
    }
}

/// A read-write lock handle: `with rw.read():` for a shared hold, `with rw.write():` for
/// the exclusive one. A waiting writer turns new readers away; the writer may also read.
#[pyclass(frozen, module = "baton")]
pub(crate) struct RwLock {
    core: CoreRwLock,
}

impl RwLock {
    pub(crate) fn new(core: CoreRwLock) -> RwLock {
        RwLock { core }
    }

    fn take(&self, py: Python<'_>, side: Side, timeout: Option<Bound<'_, PyAny>>) -> PyResult<LockGuard> {
        let timeout = convert::seconds("timeout", timeout.as_ref())?;
        runtime::wait(py, take(self.core.clone(), side, timeout)).map(LockGuard::new)
    }

    fn try_take(&self, py: Python<'_>, side: Side) -> PyResult<Option<LockGuard>> {
        runtime::wait(py, try_take(self.core.clone(), side)).map(|g| g.map(LockGuard::new))
    }
}

#[pymethods]
impl RwLock {
    /// Waits for a shared (read) hold, at most `timeout` seconds (`Timeout` after). The
    /// guard is a context manager.
    #[pyo3(signature = (timeout=None))]
    fn read(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<LockGuard> {
        self.take(py, Side::Read, timeout)
    }

    /// One attempt at a read hold: the guard, or `None`.
    fn try_read(&self, py: Python<'_>) -> PyResult<Option<LockGuard>> {
        self.try_take(py, Side::Read)
    }

    /// Waits for the exclusive (write) hold, at most `timeout` seconds (`Timeout` after).
    /// Raises `InvalidArgument` while this handle holds the read side.
    #[pyo3(signature = (timeout=None))]
    fn write(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<LockGuard> {
        self.take(py, Side::Write, timeout)
    }

    /// One attempt at the write hold: the guard, or `None`.
    fn try_write(&self, py: Python<'_>) -> PyResult<Option<LockGuard>> {
        self.try_take(py, Side::Write)
    }

    /// Holders (readers and writer), waiting writers and the last token.
    fn inspect(&self, py: Python<'_>) -> PyResult<Inspection> {
        let core = self.core.clone();
        runtime::wait(py, async move { core.inspect().await }).map(Inspection::from)
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.core.name()
    }

    fn __repr__(&self) -> String {
        format!("<baton.RwLock {:?}>", self.core.name())
    }
}

/// The asyncio form of `RwLock`: `async with rw.read():`, `guard = await rw.write()`.
#[pyclass(frozen, module = "baton")]
pub(crate) struct AsyncRwLock {
    core: CoreRwLock,
}

impl AsyncRwLock {
    pub(crate) fn new(core: CoreRwLock) -> AsyncRwLock {
        AsyncRwLock { core }
    }

    fn acquiring(&self, py: Python<'_>, side: Side, timeout: Option<Bound<'_, PyAny>>) -> PyResult<Acquiring> {
        let timeout = convert::seconds("timeout", timeout.as_ref())?;
        let core = self.core.clone();
        let start: Start = Box::new(move |py| {
            let fut = take(core.clone(), side, timeout);
            runtime::awaitable(py, async move { fut.await.map(AsyncLockGuard::new) })
        });
        Ok(Acquiring::new(py, start))
    }

    fn try_take<'py>(&self, py: Python<'py>, side: Side) -> PyResult<Bound<'py, PyAny>> {
        let fut = try_take(self.core.clone(), side);
        runtime::awaitable(py, async move { Ok(fut.await?.map(AsyncLockGuard::new)) })
    }
}

#[pymethods]
impl AsyncRwLock {
    /// A shared (read) hold, waiting at most `timeout` seconds: await it or `async with` it.
    #[pyo3(signature = (timeout=None))]
    fn read(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<Acquiring> {
        self.acquiring(py, Side::Read, timeout)
    }

    /// One attempt at a read hold: resolves to the guard, or `None`.
    fn try_read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.try_take(py, Side::Read)
    }

    /// The exclusive (write) hold, waiting at most `timeout` seconds: await it or
    /// `async with` it.
    #[pyo3(signature = (timeout=None))]
    fn write(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<Acquiring> {
        self.acquiring(py, Side::Write, timeout)
    }

    /// One attempt at the write hold: resolves to the guard, or `None`.
    fn try_write<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.try_take(py, Side::Write)
    }

    /// Holders (readers and writer), waiting writers and the last token.
    fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core.clone();
        runtime::awaitable(py, async move { core.inspect().await.map(Inspection::from) })
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.core.name()
    }

    fn __repr__(&self) -> String {
        format!("<baton.AsyncRwLock {:?}>", self.core.name())
    }
}
