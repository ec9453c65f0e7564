//! `MultiLock`: several locks taken all-or-nothing, blocking and asyncio.

use std::time::Duration;

use baton::MultiLock as CoreMultiLock;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::convert;
use crate::enter::{Acquiring, Blocks, Start};
use crate::guard::{Held, guard_classes};
use crate::runtime;

/// Names and tokens of a multi-lock grant, in acquisition order.
pub(crate) struct MultiData {
    names: Vec<String>,
    tokens: Vec<u64>,
}

fn multi_held(g: baton::MultiGuard) -> Held<baton::MultiGuard, MultiData> {
    let data = MultiData {
        names: g.guards().iter().map(|g| g.name().to_owned()).collect(),
        tokens: g.tokens().into_iter().map(baton::FencingToken::get).collect(),
    };
    Held::new(g, format!("the multi-lock on {:?}", data.names), data)
}

impl MultiGuard {
    pub(crate) fn new(g: baton::MultiGuard) -> MultiGuard {
        MultiGuard { held: multi_held(g) }
    }
}

impl AsyncMultiGuard {
    pub(crate) fn new(g: baton::MultiGuard) -> AsyncMultiGuard {
        AsyncMultiGuard { held: multi_held(g) }
    }
}

guard_classes! {
    /// Every lock of a `MultiLock`, held. `lost` is set when any lease is lost.
    MultiGuard,
    /// The asyncio form of `MultiGuard`.
    AsyncMultiGuard,
    baton::MultiGuard, MultiData,
    getters {
        /// The names held, in acquisition (canonical) order.
        #[getter]
        fn names(&self) -> Vec<String> {
            self.held.data.names.clone()
        }

        /// One fencing token per lock, in the order of `names`.
        #[getter]
        fn tokens(&self) -> Vec<u64> {
            self.held.data.tokens.clone()
        }

        fn __repr__(&self) -> String {
            format!("<baton multi-guard of {:?}, tokens {:?}>", self.held.data.names, self.held.data.tokens)
        }
    }
    sync {}
    async {}
}

async fn take(core: CoreMultiLock, timeout: Option<Duration>) -> baton::Result<baton::MultiGuard> {
    match timeout {
        Some(t) => core.acquire_timeout(t).await,
        None => core.acquire().await,
    }
}

/// Several locks taken together, in a canonical order (so two multi-locks over the same
/// names cannot deadlock), and given back if any of them cannot be taken.
#[pyclass(frozen, module = "baton")]
pub(crate) struct MultiLock {
    core: CoreMultiLock,
    timeout: Option<Duration>,
    blocks: Blocks,
}

impl MultiLock {
    pub(crate) fn new(py: Python<'_>, core: CoreMultiLock, timeout: Option<Duration>) -> MultiLock {
        MultiLock { core, timeout, blocks: Blocks::new(py) }
    }
}

fn names(core: &CoreMultiLock) -> Vec<String> {
    core.locks().iter().map(|l| l.name().to_owned()).collect()
}

#[pymethods]
impl MultiLock {
    /// Waits until every lock is held, at most `timeout` seconds (default: the handle's
    /// `timeout`); on `Timeout` none is held.
    #[pyo3(signature = (timeout=None))]
    fn acquire(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<MultiGuard> {
        let timeout = convert::seconds("timeout", timeout.as_ref())?.or(self.timeout);
        runtime::wait(py, take(self.core.clone(), timeout)).map(MultiGuard::new)
    }

    /// One attempt at each lock: the guard, or `None` (and nothing held) if any is busy.
    fn try_acquire(&self, py: Python<'_>) -> PyResult<Option<MultiGuard>> {
        let core = self.core.clone();
        runtime::wait(py, async move { core.try_acquire().await }).map(|g| g.map(MultiGuard::new))
    }

    /// The names, in acquisition (canonical) order.
    #[getter]
    fn names(&self) -> Vec<String> {
        names(&self.core)
    }

    fn __enter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let guard = Bound::new(py, self.acquire(py, None)?)?;
        self.blocks.enter(guard.into_any())
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.blocks.exit(py, exc)
    }

    fn __repr__(&self) -> String {
        format!("<baton.MultiLock {:?}>", names(&self.core))
    }
}

/// The asyncio form of `MultiLock`.
#[pyclass(frozen, module = "baton")]
pub(crate) struct AsyncMultiLock {
    core: CoreMultiLock,
    timeout: Option<Duration>,
    blocks: Blocks,
}

impl AsyncMultiLock {
    pub(crate) fn new(py: Python<'_>, core: CoreMultiLock, timeout: Option<Duration>) -> AsyncMultiLock {
        AsyncMultiLock { core, timeout, blocks: Blocks::new(py) }
    }

    fn start(&self, timeout: Option<Duration>) -> Start {
        let core = self.core.clone();
        Box::new(move |py| {
            let fut = take(core.clone(), timeout);
            runtime::awaitable(py, async move { fut.await.map(AsyncMultiGuard::new) })
        })
    }
}

#[pymethods]
impl AsyncMultiLock {
    /// Every lock, waiting at most `timeout` seconds (default: the handle's `timeout`):
    /// await it or `async with` it.
    #[pyo3(signature = (timeout=None))]
    fn acquire(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<Acquiring> {
        let timeout = convert::seconds("timeout", timeout.as_ref())?.or(self.timeout);
        Ok(Acquiring::new(py, self.start(timeout)))
    }

    /// One attempt at each lock: resolves to the guard, or `None` if any is busy.
    fn try_acquire<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core.clone();
        runtime::awaitable(py, async move { Ok(core.try_acquire().await?.map(AsyncMultiGuard::new)) })
    }

    /// The names, in acquisition (canonical) order.
    #[getter]
    fn names(&self) -> Vec<String> {
        names(&self.core)
    }

    fn __aenter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.blocks.enter_async((self.start(self.timeout))(py)?)
    }

    #[pyo3(signature = (*exc))]
    fn __aexit__<'py>(&self, py: Python<'py>, exc: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        self.blocks.exit_async(py, exc)
    }

    fn __repr__(&self) -> String {
        format!("<baton.AsyncMultiLock {:?}>", names(&self.core))
    }
}
