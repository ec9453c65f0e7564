//! `Semaphore` and the `Permit` it grants, blocking and asyncio.

use std::time::Duration;

use baton::Semaphore as CoreSemaphore;
use baton_bind::Held;
use pyo3::prelude::*;

use crate::convert;
use crate::enter::{Acquiring, Start};
use crate::guard::guard_classes;
use crate::inspect::Inspection;
use crate::runtime;

impl Permit {
    pub(crate) fn new(p: baton::Permit) -> Permit {
        Permit { held: Held::permit(p) }
    }
}

impl AsyncPermit {
    pub(crate) fn new(p: baton::Permit) -> AsyncPermit {
        AsyncPermit { held: Held::permit(p) }
    }
}

guard_classes! {
    /// Permits held from a semaphore, with their own lease and fencing token. A context
    /// manager that gives them back on exit; dropped unreleased, they come back in the
    /// background.
    Permit,
    /// The asyncio form of `Permit`.
    AsyncPermit,
    baton::Permit, baton_bind::PermitData,
    getters {
        /// The permit id (for a `PermitSemaphore`, the id anyone may release it by).
        #[getter]
        fn id(&self) -> &str {
            &self.held.data.id
        }

        /// How many permits this holds.
        #[getter]
        fn count(&self) -> u32 {
            self.held.data.count()
        }

        /// The fencing token of this grant.
        #[getter]
        fn token(&self) -> u64 {
            self.held.data.token
        }

        /// The semaphore's name.
        #[getter]
        fn name(&self) -> &str {
            &self.held.data.name
        }

        fn __repr__(&self) -> String {
            format!("<baton permit {} x{} of {:?}, token {}>", self.held.data.id, self.held.data.count(), self.held.data.name, self.held.data.token)
        }
    }
    sync {
        /// Sets the lease to `seconds` from now. Raises `LockLost` if it was already gone.
        fn extend(&self, py: Python<'_>, seconds: Bound<'_, PyAny>) -> PyResult<()> {
            let lease = convert::required_seconds("lease extension", &seconds)?;
            runtime::wait(py, self.held.cell.clone().extend(lease))
        }
    }
    async {
        /// Sets the lease to `seconds` from now. Raises `LockLost` if it was already gone.
        fn extend<'py>(&self, py: Python<'py>, seconds: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
            let lease = convert::required_seconds("lease extension", &seconds)?;
            runtime::awaitable(py, self.held.cell.clone().extend(lease))
        }
    }
}

async fn take(core: CoreSemaphore, count: u32, timeout: Option<Duration>) -> baton::Result<baton::Permit> {
    core.acquire_many_within(count, timeout).await
}

/// The permit count argument: a positive int, 1 when not given.
fn count_arg(count: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
    match count.filter(|c| !c.is_none()) {
        Some(c) => convert::int("permit count", c),
        None => Ok(1),
    }
}

/// A semaphore of N permits (every user of the name must agree on N). Each `acquire`
/// returns a `Permit` with its own lease; a crashed holder's permits come back when its
/// lease ends.
#[pyclass(frozen, module = "baton")]
pub(crate) struct Semaphore {
    core: CoreSemaphore,
}

impl Semaphore {
    pub(crate) fn new(core: CoreSemaphore) -> Semaphore {
        Semaphore { core }
    }
}

#[pymethods]
impl Semaphore {
    /// Waits for `count` permits at once, at most `timeout` seconds (`Timeout` after).
    /// The permit is a context manager.
    #[pyo3(signature = (count=None, timeout=None), text_signature = "(self, count=1, timeout=None)")]
    fn acquire(
        &self,
        py: Python<'_>,
        count: Option<Bound<'_, PyAny>>,
        timeout: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Permit> {
        let (count, timeout) = (count_arg(count.as_ref())?, convert::seconds("timeout", timeout.as_ref())?);
        runtime::wait(py, take(self.core.clone(), count, timeout)).map(Permit::new)
    }

    /// One attempt at `count` permits: the permit, or `None` when not enough are free.
    #[pyo3(signature = (count=None), text_signature = "(self, count=1)")]
    fn try_acquire(&self, py: Python<'_>, count: Option<Bound<'_, PyAny>>) -> PyResult<Option<Permit>> {
        let count = count_arg(count.as_ref())?;
        let core = self.core.clone();
        runtime::wait(py, async move { core.try_acquire_many(count).await }).map(|p| p.map(Permit::new))
    }

    /// Permits free right now.
    fn available(&self, py: Python<'_>) -> PyResult<u32> {
        let core = self.core.clone();
        runtime::wait(py, async move { core.available().await })
    }

    /// Current permit holders and the last token.
    fn inspect(&self, py: Python<'_>) -> PyResult<Inspection> {
        let core = self.core.clone();
        runtime::wait(py, async move { core.inspect().await }).map(Inspection::from)
    }

    /// The total number of permits.
    #[getter]
    fn permits(&self) -> u32 {
        self.core.permits()
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.core.name()
    }

    fn __repr__(&self) -> String {
        format!("<baton.Semaphore {:?} of {}>", self.core.name(), self.core.permits())
    }
}

/// The asyncio form of `Semaphore`: `async with sem.acquire():`, `await sem.available()`.
#[pyclass(frozen, module = "baton")]
pub(crate) struct AsyncSemaphore {
    core: CoreSemaphore,
}

impl AsyncSemaphore {
    pub(crate) fn new(core: CoreSemaphore) -> AsyncSemaphore {
        AsyncSemaphore { core }
    }
}

#[pymethods]
impl AsyncSemaphore {
    /// `count` permits at once, waiting at most `timeout` seconds: await it for the
    /// permit, or `async with` it.
    #[pyo3(signature = (count=None, timeout=None), text_signature = "(self, count=1, timeout=None)")]
    fn acquire(
        &self,
        py: Python<'_>,
        count: Option<Bound<'_, PyAny>>,
        timeout: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Acquiring> {
        let (count, timeout) = (count_arg(count.as_ref())?, convert::seconds("timeout", timeout.as_ref())?);
        let core = self.core.clone();
        let start: Start = Box::new(move |py| {
            let fut = take(core.clone(), count, timeout);
            runtime::awaitable(py, async move { fut.await.map(AsyncPermit::new) })
        });
        Ok(Acquiring::new(py, start))
    }

    /// One attempt at `count` permits: resolves to the permit, or `None`.
    #[pyo3(signature = (count=None), text_signature = "(self, count=1)")]
    fn try_acquire<'py>(&self, py: Python<'py>, count: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let count = count_arg(count.as_ref())?;
        let core = self.core.clone();
        runtime::awaitable(py, async move { Ok(core.try_acquire_many(count).await?.map(AsyncPermit::new)) })
    }

    /// Permits free right now.
    fn available<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core.clone();
        runtime::awaitable(py, async move { core.available().await })
    }

    /// Current permit holders and the last token.
    fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core.clone();
        runtime::awaitable(py, async move { core.inspect().await.map(Inspection::from) })
    }

    /// The total number of permits.
    #[getter]
    fn permits(&self) -> u32 {
        self.core.permits()
    }

    /// The name.
    #[getter]
    fn name(&self) -> &str {
        self.core.name()
    }

    fn __repr__(&self) -> String {
        format!("<baton.AsyncSemaphore {:?} of {}>", self.core.name(), self.core.permits())
    }
}
