//! `with handle:` / `async with handle:` support, and `Acquiring`, the pending acquire the
//! asyncio API returns (awaitable, and an async context manager).
//!
//! A handle may be entered again while entered (locks are re-entrant), so each keeps the
//! guards of its open blocks in a list, innermost last. The asyncio enter appends in a
//! small coroutine (`baton._aio.enter`) right after the grant arrives, with no await in
//! between: a task cancelled at any point either gets no grant or gets it on the list,
//! and a grant nobody received is dropped, which releases it.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::runtime;

/// The guards of a handle's open `with` blocks.
pub(crate) struct Blocks(Py<PyList>);

impl Blocks {
    pub(crate) fn new(py: Python<'_>) -> Blocks {
        Blocks(PyList::empty(py).unbind())
    }

    /// Records `guard` (from a blocking acquire) and returns it for `as`.
    pub(crate) fn enter<'py>(&self, guard: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.0.bind(guard.py()).append(&guard)?;
        Ok(guard)
    }

    /// Leaves the innermost block: the guard's own `__exit__` releases it.
    pub(crate) fn exit(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        match self.pop(py)? {
            Some(guard) => guard.call_method1("__exit__", exc)?.extract(),
            None => Ok(false),
        }
    }

    /// `await baton._aio.enter(acquiring, blocks)`: the guard, recorded.
    pub(crate) fn enter_async<'py>(&self, acquiring: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = acquiring.py();
        py.import("baton._aio")?.call_method1("enter", (acquiring, self.0.bind(py)))
    }

    /// Leaves the innermost `async with` block through the guard's `__aexit__`.
    pub(crate) fn exit_async<'py>(&self, py: Python<'py>, exc: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        match self.pop(py)? {
            Some(guard) => guard.call_method1("__aexit__", exc),
            None => runtime::awaitable(py, async { Ok(false) }),
        }
    }

    fn pop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let list = self.0.bind(py);
        if list.is_empty() {
            return Ok(None);
        }
        list.call_method0("pop").map(Some)
    }
}

/// Makes the awaitable of one acquire (a fresh core call each time).
pub(crate) type Start = Box<dyn for<'py> Fn(Python<'py>) -> PyResult<Bound<'py, PyAny>> + Send + Sync>;

/// A pending acquire: `await` it for the guard, or use it as `async with … as guard:`.
/// Nothing is requested from the store until it is awaited or entered.
#[pyclass(frozen, module = "baton")]
pub(crate) struct Acquiring {
    start: Start,
    blocks: Blocks,
}

impl Acquiring {
    pub(crate) fn new(py: Python<'_>, start: Start) -> Acquiring {
        Acquiring { start, blocks: Blocks::new(py) }
    }
}

#[pymethods]
impl Acquiring {
    fn __await__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        (self.start)(py)?.call_method0("__await__")
    }

    fn __aenter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.blocks.enter_async((self.start)(py)?)
    }

    #[pyo3(signature = (*exc))]
    fn __aexit__<'py>(&self, py: Python<'py>, exc: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        self.blocks.exit_async(py, exc)
    }

    fn __repr__(&self) -> &'static str {
        "<baton.Acquiring: await it, or use it with `async with`>"
    }
}
