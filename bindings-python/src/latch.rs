//! `CountDownLatch`, blocking and asyncio (one macro: only the way calls run differs).

use baton::CountDownLatch as CoreLatch;
use pyo3::prelude::*;

use crate::convert;
use crate::runtime;

macro_rules! latch_class {
    ($(#[$meta:meta])* $Class:ident, $run:path) => {
        $(#[$meta])*
        #[pyclass(frozen, module = "baton")]
        pub(crate) struct $Class {
            core: CoreLatch,
        }

        impl $Class {
            pub(crate) fn new(core: CoreLatch) -> $Class {
                $Class { core }
            }
        }

        #[pymethods]
        impl $Class {
            /// Sets the count to `count` if the latch is open (zero); returns whether it did.
            fn try_set_count<'py>(&self, py: Python<'py>, count: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                let count: u64 = convert::int("latch count", &count)?;
                let core = self.core.clone();
                $run(py, async move { core.try_set_count(count).await })
            }

            /// Decrements the count (never below zero); returns the new count.
            fn count_down<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = self.core.clone();
                $run(py, async move { core.count_down().await })
            }

            /// The current count.
            fn count<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = self.core.clone();
                $run(py, async move { core.count().await })
            }

            /// Waits until the count is zero, at most `timeout` seconds (`Timeout` after).
            #[pyo3(signature = (timeout=None))]
            fn wait<'py>(&self, py: Python<'py>, timeout: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
                let timeout = convert::seconds("timeout", timeout.as_ref())?;
                let core = self.core.clone();
                $run(py, async move {
                    match timeout {
                        Some(t) => core.wait_timeout(t).await,
                        None => core.wait().await,
                    }
                })
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

latch_class!(
    /// A count-down latch: opens once its count reaches zero. Blocking calls release the
    /// GIL while they wait.
    CountDownLatch,
    runtime::wait_py
);

latch_class!(
    /// The asyncio form of `CountDownLatch`: every method returns an awaitable.
    AsyncCountDownLatch,
    runtime::awaitable
);
