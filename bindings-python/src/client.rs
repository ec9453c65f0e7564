//! `Client` and `AsyncClient` (one macro: the handles they make differ, the arguments do
//! not), plus `connect` and `connect_async`.

use baton::Client as CoreClient;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::convert;
use crate::fence::{AsyncFence, Fence};
use crate::inspect::Inspection;
use crate::latch::{AsyncCountDownLatch, CountDownLatch};
use crate::lock::{AsyncFairLock, AsyncLock, FairLock, Lock};
use crate::multi::{AsyncMultiLock, MultiLock};
use crate::permits::{AsyncPermitSemaphore, PermitSemaphore};
use crate::runtime;
use crate::rw::{AsyncRwLock, RwLock};
use crate::semaphore::{AsyncSemaphore, Semaphore};

macro_rules! client_class {
    (
        $(#[$meta:meta])* $Client:ident, $run:path, $run_detached:path,
        $Lock:ident, $FairLock:ident, $RwLock:ident, $Semaphore:ident,
        $PermitSemaphore:ident, $Latch:ident, $MultiLock:ident, $Fence:ident,
        { $($own:tt)* }
    ) => {
        $(#[$meta])*
        #[pyclass(frozen, module = "baton")]
        pub(crate) struct $Client {
            core: CoreClient,
        }

        #[pymethods]
        impl $Client {
            $($own)*

            /// A lock handle. `ttl`: a fixed lease in seconds instead of the watchdog;
            /// `lease`: the watchdog's lease; `owner`: bind re-entrancy to this id;
            /// `timeout`: the default wait of `acquire()` and `with`.
            #[pyo3(signature = (name, *, ttl=None, lease=None, owner=None, timeout=None))]
            fn lock(
                &self,
                py: Python<'_>,
                name: Bound<'_, PyAny>,
                ttl: Option<Bound<'_, PyAny>>,
                lease: Option<Bound<'_, PyAny>>,
                owner: Option<String>,
                timeout: Option<Bound<'_, PyAny>>,
            ) -> PyResult<$Lock> {
                let (name, opts) = (convert::name(&name)?, convert::lock_options(ttl.as_ref(), lease.as_ref(), owner)?);
                let timeout = convert::seconds("timeout", timeout.as_ref())?;
                Ok($Lock::new(py, self.core.lock_with(&name, opts), timeout))
            }

            /// A fair lock handle (grants in request order); arguments as `lock`.
            #[pyo3(signature = (name, *, ttl=None, lease=None, owner=None, timeout=None))]
            fn fair_lock(
                &self,
                py: Python<'_>,
                name: Bound<'_, PyAny>,
                ttl: Option<Bound<'_, PyAny>>,
                lease: Option<Bound<'_, PyAny>>,
                owner: Option<String>,
                timeout: Option<Bound<'_, PyAny>>,
            ) -> PyResult<$FairLock> {
                let (name, opts) = (convert::name(&name)?, convert::lock_options(ttl.as_ref(), lease.as_ref(), owner)?);
                let timeout = convert::seconds("timeout", timeout.as_ref())?;
                Ok($FairLock::new(py, self.core.fair_lock_with(&name, opts), timeout))
            }

            /// A read-write lock handle; options as `lock`.
            #[pyo3(signature = (name, *, ttl=None, lease=None, owner=None))]
            fn rw_lock(
                &self,
                name: Bound<'_, PyAny>,
                ttl: Option<Bound<'_, PyAny>>,
                lease: Option<Bound<'_, PyAny>>,
                owner: Option<String>,
            ) -> PyResult<$RwLock> {
                let (name, opts) = (convert::name(&name)?, convert::lock_options(ttl.as_ref(), lease.as_ref(), owner)?);
                Ok($RwLock::new(self.core.rw_lock_with(&name, opts)))
            }

            /// A semaphore of `permits` permits (every user of the name must agree);
            /// `ttl`/`lease` as for `lock`.
            #[pyo3(signature = (name, permits, *, ttl=None, lease=None))]
            fn semaphore(
                &self,
                name: Bound<'_, PyAny>,
                permits: Bound<'_, PyAny>,
                ttl: Option<Bound<'_, PyAny>>,
                lease: Option<Bound<'_, PyAny>>,
            ) -> PyResult<$Semaphore> {
                let (name, opts) = (convert::name(&name)?, convert::lock_options(ttl.as_ref(), lease.as_ref(), None)?);
                let permits = convert::int("permits", &permits)?;
                Ok($Semaphore::new(self.core.semaphore_with(&name, permits, opts)))
            }

            /// A semaphore whose permits have ids and leases of their own.
            #[pyo3(signature = (name, permits, *, ttl=None, lease=None))]
            fn permit_semaphore(
                &self,
                name: Bound<'_, PyAny>,
                permits: Bound<'_, PyAny>,
                ttl: Option<Bound<'_, PyAny>>,
                lease: Option<Bound<'_, PyAny>>,
            ) -> PyResult<$PermitSemaphore> {
                let (name, opts) = (convert::name(&name)?, convert::lock_options(ttl.as_ref(), lease.as_ref(), None)?);
                let permits = convert::int("permits", &permits)?;
                Ok($PermitSemaphore::new(self.core.permit_semaphore_with(&name, permits, opts)))
            }

            /// A count-down latch handle.
            fn count_down_latch(&self, name: Bound<'_, PyAny>) -> PyResult<$Latch> {
                Ok($Latch::new(self.core.count_down_latch(&convert::name(&name)?)))
            }

            /// A multi-lock over `names` (a list of names, taken all or nothing in a
            /// canonical order); `ttl`/`lease` apply to each lock, `timeout` is the default
            /// wait of `acquire()` and `with`.
            #[pyo3(signature = (names, *, ttl=None, lease=None, timeout=None))]
            fn multi_lock(
                &self,
                py: Python<'_>,
                names: Vec<Bound<'_, PyAny>>,
                ttl: Option<Bound<'_, PyAny>>,
                lease: Option<Bound<'_, PyAny>>,
                timeout: Option<Bound<'_, PyAny>>,
            ) -> PyResult<$MultiLock> {
                let names = names.iter().map(convert::name).collect::<PyResult<Vec<_>>>()?;
                let opts = convert::lock_options(ttl.as_ref(), lease.as_ref(), None)?;
                let timeout = convert::seconds("timeout", timeout.as_ref())?;
                let locks = names.iter().map(|n| self.core.lock_with(n, opts.clone()));
                Ok($MultiLock::new(py, baton::MultiLock::new(locks), timeout))
            }

            /// Fenced writes on this client's store: the store refuses a write whose
            /// token is below one it has seen for the key.
            fn fence(&self) -> $Fence {
                $Fence::new(self.core.fence())
            }

            /// Holder, hold count, lease left and last token of the lock `name`.
            fn inspect<'py>(&self, py: Python<'py>, name: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                let name = convert::name(&name)?;
                let core = self.core.clone();
                $run(py, async move { core.inspect(&name).await.map(Inspection::from) })
            }

            /// Releases everything this client holds, stops renewals and closes the store
            /// connection; later calls raise `Closed`. Idempotent.
            fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                let core = self.core.clone();
                $run_detached(py, async move {
                    core.close().await;
                    Ok(())
                })
            }

            /// This client's id (the first part of every owner id it makes).
            #[getter]
            fn id(&self) -> &str {
                self.core.id()
            }

            /// The store URL, password redacted.
            #[getter]
            fn url(&self) -> String {
                self.core.url()
            }

            /// Whether `close()` was called.
            #[getter]
            fn closed(&self) -> bool {
                self.core.is_closed()
            }

            fn __repr__(&self) -> String {
                format!("<baton.{} {}>", stringify!($Client), self.core.url())
            }
        }
    };
}

client_class!(
    /// A connection to one store (blocking API). Thread-safe: share one client between
    /// threads. A context manager that closes the client on exit.
    Client, runtime::wait_py, wait_detached_py,
    Lock, FairLock, RwLock, Semaphore, PermitSemaphore, CountDownLatch, MultiLock, Fence,
    {
        fn __enter__(slf: Py<Self>) -> Py<Self> {
            slf
        }

        #[pyo3(signature = (*_exc))]
        fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
            self.close(py).map(|_| false)
        }
    }
);

client_class!(
    /// A connection to one store (asyncio API): handles whose waiting calls return
    /// awaitables. An async context manager that closes the client on exit.
    AsyncClient, runtime::awaitable, runtime::awaitable_detached,
    AsyncLock, AsyncFairLock, AsyncRwLock, AsyncSemaphore, AsyncPermitSemaphore,
    AsyncCountDownLatch, AsyncMultiLock, AsyncFence,
    {
        fn __aenter__<'py>(slf: Py<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            runtime::awaitable(py, async move { Ok(slf) })
        }

        #[pyo3(signature = (*_exc))]
        fn __aexit__<'py>(&self, py: Python<'py>, _exc: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
            let core = self.core.clone();
            runtime::awaitable_detached(py, async move {
                core.close().await;
                Ok(false)
            })
        }
    }
);

fn wait_detached_py<'py, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: std::future::Future<Output = baton::Result<()>> + Send + 'static,
{
    runtime::wait_detached(py, fut)?;
    Ok(py.None().into_bound(py))
}

/// Connects to the store `url` names (`memory://`, `sqlite:///path/file.db`, and every
/// other scheme of this build) and returns a blocking `Client`. Raises `InvalidUrl`,
/// `Unsupported` (scheme not in this build) or `ConnectionError`; messages never contain
/// the URL's password.
#[pyfunction]
pub(crate) fn connect(py: Python<'_>, url: String) -> PyResult<Client> {
    runtime::wait(py, async move { CoreClient::connect(&url).await }).map(|core| Client { core })
}

/// Connects to the store `url` names; resolves to an `AsyncClient` (asyncio API).
#[pyfunction]
pub(crate) fn connect_async(py: Python<'_>, url: String) -> PyResult<Bound<'_, PyAny>> {
    runtime::awaitable(py, async move { CoreClient::connect(&url).await.map(|core| AsyncClient { core }) })
}
