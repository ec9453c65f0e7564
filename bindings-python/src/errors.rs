//! Core errors → the exception classes of `baton/_errors.py`: one `match` on the kind (the
//! classes are this binding's own names: `ConnectionError`, `BackendError` for two kinds).

use baton::{Error, ErrorKind};
use pyo3::prelude::*;

mod classes {
    pyo3::import_exception!(baton._errors, InvalidArgument);
    pyo3::import_exception!(baton._errors, InvalidUrl);
    pyo3::import_exception!(baton._errors, Timeout);
    pyo3::import_exception!(baton._errors, NotHeld);
    pyo3::import_exception!(baton._errors, LockLost);
    pyo3::import_exception!(baton._errors, ConnectionError);
    pyo3::import_exception!(baton._errors, BackendError);
    pyo3::import_exception!(baton._errors, Closed);
    pyo3::import_exception!(baton._errors, Unsupported);
}

/// The Python exception for a core error; the message is the core's (passwords redacted).
pub(crate) fn to_py(e: Error) -> PyErr {
    let msg = e.message().to_owned();
    match e.kind() {
        ErrorKind::InvalidArgument => classes::InvalidArgument::new_err(msg),
        ErrorKind::InvalidUrl => classes::InvalidUrl::new_err(msg),
        ErrorKind::Timeout => classes::Timeout::new_err(msg),
        ErrorKind::NotHeld => classes::NotHeld::new_err(msg),
        ErrorKind::LockLost => classes::LockLost::new_err(msg),
        ErrorKind::Connection => classes::ConnectionError::new_err(msg),
        ErrorKind::Backend => classes::BackendError::new_err(msg),
        ErrorKind::Closed => classes::Closed::new_err(msg),
        ErrorKind::Unsupported => classes::Unsupported::new_err(msg),
        // `ErrorKind` is non-exhaustive: a kind added later is a BackendError until mapped.
        _ => classes::BackendError::new_err(msg),
    }
}

/// `InvalidArgument` with `msg`, for bad input the binding itself finds (types, ranges).
pub(crate) fn invalid(msg: impl Into<String>) -> PyErr {
    to_py(baton_bind::kind::invalid(msg))
}

/// Raises the exception of the kind named `kind` (`"Timeout"`, …): the test hook that
/// checks every mapping of `ErrorKind.ALL`.
#[pyfunction]
#[pyo3(name = "_raise")]
pub(crate) fn raise(kind: &str) -> PyResult<()> {
    Err(to_py(baton_bind::kind::raised(kind)))
}

/// The names of every error kind of the core, in declaration order.
#[pyfunction]
#[pyo3(name = "_error_kinds")]
pub(crate) fn error_kinds() -> Vec<&'static str> {
    baton_bind::kind::names()
}
