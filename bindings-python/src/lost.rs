//! `guard.lost`: a `threading.Event`-like view of the core's lost signal (and its asyncio
//! twin). Nothing calls back into Python from the runtime: waiting polls the signal.

use std::future::Future;

use baton::LostSignal;
use baton_bind::any_lost;
use pyo3::prelude::*;

use crate::runtime;

fn is_lost(signals: &[LostSignal]) -> bool {
    signals.iter().any(LostSignal::is_lost)
}

/// `wait(timeout)`'s future: `true` once lost, `false` when `timeout` passed first.
/// A timeout of 0 only checks, as `threading.Event.wait(0)` does.
fn waiting(
    signals: &[LostSignal],
    timeout: Option<&Bound<'_, PyAny>>,
) -> PyResult<impl Future<Output = baton::Result<bool>> + Send + 'static> {
    let zero = match timeout {
        Some(t) if !t.is_none() => t.extract::<f64>().is_ok_and(|s| s == 0.0),
        _ => false,
    };
    let limit = if zero { None } else { crate::convert::seconds("timeout", timeout)? };
    let signals = signals.to_vec();
    Ok(async move {
        if zero || is_lost(&signals) {
            return Ok(is_lost(&signals));
        }
        Ok(match limit {
            Some(limit) => tokio::time::timeout(limit, any_lost(signals)).await.is_ok(),
            None => {
                any_lost(signals).await;
                true
            }
        })
    })
}

/// Set when the guard's lease is lost (renewal refused or failing past the lease, ttl
/// expired, or the client closed); never set while the lease is kept.
#[pyclass(frozen, module = "baton", name = "LostEvent")]
pub(crate) struct LostEvent {
    signals: Vec<LostSignal>,
}

impl LostEvent {
    pub(crate) fn new(signals: Vec<LostSignal>) -> LostEvent {
        LostEvent { signals }
    }
}

#[pymethods]
impl LostEvent {
    /// Whether the lease is known to be lost.
    fn is_set(&self) -> bool {
        is_lost(&self.signals)
    }

    /// Blocks (GIL released) until the lease is lost or `timeout` seconds pass; returns
    /// whether it was lost. `None` waits without limit.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<Bound<'_, PyAny>>) -> PyResult<bool> {
        runtime::wait(py, waiting(&self.signals, timeout.as_ref())?)
    }

    fn __repr__(&self) -> String {
        format!("<baton.LostEvent set={}>", if self.is_set() { "True" } else { "False" })
    }
}

/// The asyncio form of [`LostEvent`]: `await guard.lost.wait()`.
#[pyclass(frozen, module = "baton", name = "AsyncLostEvent")]
pub(crate) struct AsyncLostEvent {
    signals: Vec<LostSignal>,
}

impl AsyncLostEvent {
    pub(crate) fn new(signals: Vec<LostSignal>) -> AsyncLostEvent {
        AsyncLostEvent { signals }
    }
}

#[pymethods]
impl AsyncLostEvent {
    /// Whether the lease is known to be lost.
    fn is_set(&self) -> bool {
        is_lost(&self.signals)
    }

    /// Waits until the lease is lost or `timeout` seconds pass; resolves to whether it
    /// was lost. `None` waits without limit.
    #[pyo3(signature = (timeout=None))]
    fn wait<'py>(&self, py: Python<'py>, timeout: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        runtime::awaitable(py, waiting(&self.signals, timeout.as_ref())?)
    }

    fn __repr__(&self) -> String {
        format!("<baton.AsyncLostEvent set={}>", if self.is_set() { "True" } else { "False" })
    }
}
