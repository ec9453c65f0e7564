//! The native module `baton._baton` behind the Python package `baton`: it translates types,
//! errors and async to and from the `baton` core, and holds no lock logic of its own.
//!
//! Layout: one file per public noun (`client`, `lock`, `rw`, `semaphore`, `permits`,
//! `latch`, `multi`, `inspect`), the guards (`guard`, `lost`; the cell behind them is `baton_bind::Cell`), `with` support
//! (`enter`), and the plumbing (`runtime`: blocking and asyncio bridges, `errors`,
//! `convert`).

mod client;
mod convert;
mod enter;
mod errors;
mod fence;
mod guard;
mod inspect;
mod latch;
mod lock;
mod lost;
mod multi;
mod permits;
mod runtime;
mod rw;
mod semaphore;

use pyo3::prelude::*;

/// Distributed locks, semaphores and latches with fencing tokens (native part).
#[pymodule(gil_used = false)]
fn _baton(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let close_gate = wrap_pyfunction!(runtime::exit_gate::_close_exit_gate, m)?;
    m.py().import("atexit")?.call_method1("register", (close_gate,))?;
    m.add_function(wrap_pyfunction!(client::connect, m)?)?;
    m.add_function(wrap_pyfunction!(client::connect_async, m)?)?;
    m.add_function(wrap_pyfunction!(fence::fenced_update, m)?)?;
    m.add_function(wrap_pyfunction!(errors::raise, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_kinds, m)?)?;
    m.add_class::<client::Client>()?;
    m.add_class::<client::AsyncClient>()?;
    m.add_class::<lock::Lock>()?;
    m.add_class::<lock::AsyncLock>()?;
    m.add_class::<lock::FairLock>()?;
    m.add_class::<lock::AsyncFairLock>()?;
    m.add_class::<rw::RwLock>()?;
    m.add_class::<rw::AsyncRwLock>()?;
    m.add_class::<semaphore::Semaphore>()?;
    m.add_class::<semaphore::AsyncSemaphore>()?;
    m.add_class::<semaphore::Permit>()?;
    m.add_class::<semaphore::AsyncPermit>()?;
    m.add_class::<permits::PermitSemaphore>()?;
    m.add_class::<permits::AsyncPermitSemaphore>()?;
    m.add_class::<fence::Fence>()?;
    m.add_class::<fence::AsyncFence>()?;
    m.add_class::<latch::CountDownLatch>()?;
    m.add_class::<latch::AsyncCountDownLatch>()?;
    m.add_class::<multi::MultiLock>()?;
    m.add_class::<multi::AsyncMultiLock>()?;
    m.add_class::<multi::MultiGuard>()?;
    m.add_class::<multi::AsyncMultiGuard>()?;
    m.add_class::<guard::LockGuard>()?;
    m.add_class::<guard::AsyncLockGuard>()?;
    m.add_class::<lost::LostEvent>()?;
    m.add_class::<lost::AsyncLostEvent>()?;
    m.add_class::<enter::Acquiring>()?;
    m.add_class::<inspect::Inspection>()?;
    m.add_class::<inspect::Holder>()?;
    Ok(())
}
