//! `PermitSemaphore`: permits with ids and leases of their own, blocking and asyncio.

use std::time::Duration;

use baton::PermitSemaphore as CorePermitSemaphore;
use pyo3::prelude::*;

use crate::convert;
use crate::enter::{Acquiring, Start};
use crate::inspect::Inspection;
use crate::runtime;
use crate::semaphore::{AsyncPermit, Permit};

/// `acquire(timeout=, lease=)`'s arguments.
fn args(
    timeout: Option<&Bound<'_, PyAny>>,
    lease: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<Duration>, Option<Duration>)> {
    Ok((convert::seconds("timeout", timeout)?, convert::seconds("permit lease", lease)?))
}

async fn take(
    core: CorePermitSemaphore,
    timeout: Option<Duration>,
    lease: Option<Duration>,
) -> baton::Result<baton::Permit> {
    match (timeout, lease) {
        // The core takes both (`acquire_within`); this API refuses the pair until its stubs,
        // README and tests say otherwise.
        (Some(_), Some(_)) => Err(baton::Error::new(
            baton::ErrorKind::Unsupported,
            "a permit semaphore acquire takes a timeout or a lease, not both",
        )),
        (timeout, lease) => core.acquire_within(timeout, lease).await,
    }
}

/// Defines a permit semaphore class; `$run` makes calls blocking or awaitable, `$own`
/// holds the methods that differ (acquire, try_acquire).
macro_rules! permit_semaphore_class {
    ($(#[$meta:meta])* $Class:ident, $run:path, { $($own:tt)* }) => {
        $(#[$meta])*
        #[pyclass(frozen, module = "baton")]
        pub(crate) struct $Class {
            core: CorePermitSemaphore,
        }

        impl $Class {
            pub(crate) fn new(core: CorePermitSemaphore) -> $Class {
                $Class { core }
            }
        }

        #[pymethods]
        impl $Class {
            $($own)*

            /// Releases the permit `id`, whoever acquired it (`NotHeld` when no live permit
            /// has this id).
            fn release<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
                let core = self.core.clone();
                $run(py, async move { core.release(&id).await })
            }

            /// Sets permit `id`'s lease to `seconds` from now (`NotHeld` when no live permit
            /// has this id).
            fn update_lease<'py>(&self, py: Python<'py>, id: String, seconds: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                let lease = convert::required_seconds("permit lease", &seconds)?;
                let core = self.core.clone();
                $run(py, async move { core.update_lease(&id, lease).await })
            }

            /// Permits free right now.
            fn available<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = self.core.clone();
                $run(py, async move { core.available().await })
            }

            /// Live permits (with ids and lease left) and the last token.
            fn inspect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = self.core.clone();
                $run(py, async move { core.inspect().await.map(Inspection::from) })
            }

            /// The name.
            #[getter]
            fn name(&self) -> &str {
                self.core.name()
            }

            fn __repr__(&self) -> String {
                format!("<baton.{} {:?}>", stringify!($Class), self.core.name())
            }
        }
    };
}

permit_semaphore_class!(
    /// A semaphore whose permits each carry an id and a lease: a watchdog lease by default,
    /// or a fixed `lease` per acquire. Any process may release a permit by id.
    PermitSemaphore,
    runtime::wait_py,
    {
        /// Waits for a permit, at most `timeout` seconds; with `lease`, the permit expires
        /// that many seconds after the grant unless extended (not both).
        #[pyo3(signature = (timeout=None, lease=None))]
        fn acquire(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>, lease: Option<Bound<'_, PyAny>>) -> PyResult<Permit> {
            let (timeout, lease) = args(timeout.as_ref(), lease.as_ref())?;
            runtime::wait(py, take(self.core.clone(), timeout, lease)).map(Permit::new)
        }

        /// One attempt: the permit, or `None` when none is free.
        fn try_acquire(&self, py: Python<'_>) -> PyResult<Option<Permit>> {
            let core = self.core.clone();
            runtime::wait(py, async move { core.try_acquire().await }).map(|p| p.map(Permit::new))
        }
    }
);

permit_semaphore_class!(
    /// The asyncio form of `PermitSemaphore`.
    AsyncPermitSemaphore,
    runtime::awaitable,
    {
        /// A permit, waiting at most `timeout` seconds, with an optional fixed `lease` (not
        /// both): await it or `async with` it.
        #[pyo3(signature = (timeout=None, lease=None))]
        fn acquire(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>, lease: Option<Bound<'_, PyAny>>) -> PyResult<Acquiring> {
            let (timeout, lease) = args(timeout.as_ref(), lease.as_ref())?;
            let core = self.core.clone();
            let start: Start = Box::new(move |py| {
                let fut = take(core.clone(), timeout, lease);
                runtime::awaitable(py, async move { fut.await.map(AsyncPermit::new) })
            });
            Ok(Acquiring::new(py, start))
        }

        /// One attempt: resolves to the permit, or `None` when none is free.
        fn try_acquire<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            let core = self.core.clone();
            runtime::awaitable(py, async move { Ok(core.try_acquire().await?.map(AsyncPermit::new)) })
        }
    }
);
