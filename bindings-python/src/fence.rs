//! `Fence` and `AsyncFence` (fenced writes at the resource), and `fenced_update`.

use baton::{Fence as CoreFence, FencingToken};
use pyo3::prelude::*;

use crate::convert;
use crate::runtime;

macro_rules! fence_class {
    ($(#[$meta:meta])* $Class:ident, $run:path) => {
        $(#[$meta])*
        #[pyclass(frozen, module = "baton")]
        pub(crate) struct $Class {
            core: CoreFence,
        }

        impl $Class {
            pub(crate) fn new(core: CoreFence) -> $Class {
                $Class { core }
            }
        }

        #[pymethods]
        impl $Class {
            /// Writes `value` under `key` unless the store has seen a larger token for it;
            /// True when written, False when a later holder has written.
            fn write<'py>(&self, py: Python<'py>, key: Bound<'py, PyAny>, value: String, token: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                let (key, token) = (convert::name(&key)?, FencingToken::new(convert::int("token", &token)?));
                let core = self.core.clone();
                $run(py, async move { core.write(&key, &value, token).await })
            }

            /// `(value, token)` of the last write under `key`, or None.
            fn read<'py>(&self, py: Python<'py>, key: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                let key = convert::name(&key)?;
                let core = self.core.clone();
                $run(py, async move { Ok(core.read(&key).await?.map(|f| (f.value, f.token.get()))) })
            }

            /// Runs a SQL `UPDATE` guarded by `token` (see `fenced_update`); the rows it changed.
            fn execute<'py>(&self, py: Python<'py>, statement: String, token: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                let token = FencingToken::new(convert::int("token", &token)?);
                let core = self.core.clone();
                $run(py, async move { core.execute(&statement, token).await })
            }

            fn __repr__(&self) -> String {
                format!("<baton.{}>", stringify!($Class))
            }
        }
    };
}

fence_class!(
    /// Fenced writes on the client's store: the store refuses a write whose token is
    /// below one it has seen for the key.
    Fence,
    runtime::wait_py
);

fence_class!(
    /// The asyncio form of `Fence`: every method returns an awaitable.
    AsyncFence,
    runtime::awaitable
);

/// `statement` (one SQL UPDATE) guarded by `token`: `fence = token` added to its SET list
/// and `fence <= token` to its WHERE clause. Run it with your own driver and parameters.
#[pyfunction]
pub(crate) fn fenced_update(statement: &str, token: Bound<'_, PyAny>) -> PyResult<String> {
    let token = FencingToken::new(convert::int("token", &token)?);
    baton::fenced_update(statement, token).map_err(crate::errors::to_py)
}
