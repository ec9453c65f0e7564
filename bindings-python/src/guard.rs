//! Guards: `LockGuard`, `Permit`, `MultiGuard` and their asyncio twins. Each is a context
//! manager that releases on exit; `release()` twice is `NotHeld`.

use pyo3::prelude::*;

use crate::runtime;
pub(crate) use baton_bind::Held;

/// Defines a blocking guard class and its asyncio twin sharing getters (`$getters`,
/// reading `self.held.data`); `$sync`/`$async` hold the methods that differ.
macro_rules! guard_classes {
    (
        $(#[$sm:meta])* $Sync:ident,
        $(#[$am:meta])* $Async:ident,
        $Core:ty, $Data:ty,
        getters { $($getters:tt)* }
        sync { $($sync:tt)* }
        async { $($async:tt)* }
    ) => {
        $(#[$sm])*
        #[pyclass(frozen, module = "baton")]
        pub(crate) struct $Sync {
            pub(crate) held: $crate::guard::Held<$Core, $Data>,
        }

        #[pymethods]
        impl $Sync {
            $($getters)*
            $($sync)*

            /// A `threading.Event`-like object set when the lease is lost.
            #[getter]
            fn lost(&self) -> crate::lost::LostEvent {
                crate::lost::LostEvent::new(self.held.cell.lost_signals().to_vec())
            }

            /// Whether `release()` was called (or the `with` block was left).
            #[getter]
            fn released(&self) -> bool {
                self.held.cell.is_released()
            }

            /// Releases (blocking). Raises `LockLost` if the lease had been lost,
            /// `NotHeld` if this guard was released already.
            fn release(&self, py: Python<'_>) -> PyResult<()> {
                crate::runtime::wait_detached(py, self.held.cell.clone().release(true))
            }

            fn __enter__(slf: Py<Self>) -> Py<Self> {
                slf
            }

            /// Releases on leaving the block (a release failure is raised only when the
            /// block itself succeeded).
            #[pyo3(signature = (*exc))]
            fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
                let raised = crate::guard::body_raised(exc);
                crate::runtime::wait_detached(py, self.held.cell.clone().leave(raised))
            }
        }

        $(#[$am])*
        #[pyclass(frozen, module = "baton")]
        pub(crate) struct $Async {
            pub(crate) held: $crate::guard::Held<$Core, $Data>,
        }

        #[pymethods]
        impl $Async {
            $($getters)*
            $($async)*

            /// An `asyncio.Event`-like object set when the lease is lost.
            #[getter]
            fn lost(&self) -> crate::lost::AsyncLostEvent {
                crate::lost::AsyncLostEvent::new(self.held.cell.lost_signals().to_vec())
            }

            /// Whether `release()` was called (or the `async with` block was left).
            #[getter]
            fn released(&self) -> bool {
                self.held.cell.is_released()
            }

            /// Releases. Raises `LockLost` if the lease had been lost, `NotHeld` if this
            /// guard was released already. Runs to completion even if the awaiting task
            /// is cancelled.
            fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                crate::runtime::awaitable_detached(py, self.held.cell.clone().release(true))
            }

            fn __aenter__<'py>(slf: Py<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                crate::runtime::awaitable(py, async move { Ok(slf) })
            }

            /// Releases on leaving the block (a release failure is raised only when the
            /// block itself succeeded).
            #[pyo3(signature = (*exc))]
            fn __aexit__<'py>(&self, py: Python<'py>, exc: &Bound<'py, pyo3::types::PyTuple>) -> PyResult<Bound<'py, PyAny>> {
                let raised = crate::guard::body_raised(exc);
                crate::runtime::awaitable_detached(py, self.held.cell.clone().leave(raised))
            }
        }
    };
}
pub(crate) use guard_classes;

/// Whether `__exit__(exc_type, exc, tb)` was called for an exception.
pub(crate) fn body_raised(exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
    exc.get_item(0).is_ok_and(|t| !t.is_none())
}

/// Token, name and owner of a lock grant.
pub(crate) struct LockData {
    token: u64,
    name: String,
    owner: String,
}

impl LockGuard {
    pub(crate) fn new(g: baton::LockGuard) -> LockGuard {
        LockGuard { held: lock_held(g) }
    }
}

impl AsyncLockGuard {
    pub(crate) fn new(g: baton::LockGuard) -> AsyncLockGuard {
        AsyncLockGuard { held: lock_held(g) }
    }
}

fn lock_held(g: baton::LockGuard) -> Held<baton::LockGuard, LockData> {
    let data = LockData { token: g.token().get(), name: g.name().to_owned(), owner: g.owner().to_owned() };
    Held::new(g, format!("`{}`", data.name), data)
}

guard_classes! {
    /// A held lock (or read/write hold) with its fencing token. A context manager that
    /// releases on exit; dropped unreleased, it is released in the background.
    LockGuard,
    /// The asyncio form of `LockGuard`: `release()` and `extend()` are awaitable and it is an
    /// async context manager.
    AsyncLockGuard,
    baton::LockGuard, LockData,
    getters {
        /// The fencing token of this grant: pass it to the resource you protect.
        #[getter]
        fn token(&self) -> u64 {
            self.held.data.token
        }

        /// The name held.
        #[getter]
        fn name(&self) -> &str {
            &self.held.data.name
        }

        /// The owner id the grant is held under.
        #[getter]
        fn owner(&self) -> &str {
            &self.held.data.owner
        }

        fn __repr__(&self) -> String {
            format!("<baton guard of {:?}, token {}>", self.held.data.name, self.held.data.token)
        }
    }
    sync {
        /// Sets the lease to `seconds` from now (ttl grants; a watchdog grant keeps renewing
        /// afterwards). Raises `LockLost` if the lease was already gone.
        fn extend(&self, py: Python<'_>, seconds: Bound<'_, PyAny>) -> PyResult<()> {
            let lease = crate::convert::required_seconds("lease extension", &seconds)?;
            runtime::wait(py, self.held.cell.clone().extend(lease))
        }
    }
    async {
        /// Sets the lease to `seconds` from now (ttl grants; a watchdog grant keeps renewing
        /// afterwards). Raises `LockLost` if the lease was already gone.
        fn extend<'py>(&self, py: Python<'py>, seconds: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
            let lease = crate::convert::required_seconds("lease extension", &seconds)?;
            runtime::awaitable(py, self.held.cell.clone().extend(lease))
        }
    }
}
