//! Python values → core arguments: names, float seconds, counts, lock options. Bad values
//! become `InvalidArgument` (a `ValueError`) with the core's messages; wrong types stay
//! `TypeError`.

use std::time::Duration;

use baton::LockOptions;
use baton_bind::convert::LockDurations;
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::{invalid, to_py};

/// A lock/semaphore/latch name, checked as every core handle checks it (non-empty, at
/// most 255 bytes of UTF-8, no NUL), so a bad name fails where the handle is made.
pub(crate) fn name(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = obj.cast::<PyString>()?;
    let s = s.to_cow().map_err(|_| invalid("name is not valid UTF-8 (it contains a lone surrogate)"))?;
    baton::validate_name(&s).map_err(to_py)?;
    Ok(s.into_owned())
}

/// Float seconds (`what` names it in messages) → a validated duration; `None` stays `None`.
pub(crate) fn seconds(what: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Duration>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(None) };
    let secs: f64 = obj.extract().map_err(|e: PyErr| {
        if e.is_instance_of::<PyOverflowError>(obj.py()) {
            invalid(format!("{what} is too large to be a number of seconds"))
        } else {
            e
        }
    })?;
    baton_bind::convert::seconds(what, secs).map(Some).map_err(to_py)
}

/// Float seconds that must be given.
pub(crate) fn required_seconds(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Duration> {
    seconds(what, Some(obj))?.ok_or_else(|| invalid(format!("{what} must be a number of seconds, not None")))
}

/// A Python int → an integer type of the core; out of range is `InvalidArgument`.
pub(crate) fn int<T: TryFrom<i128>>(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<T> {
    let v: i128 = match obj.extract() {
        Ok(v) => v,
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
            return Err(to_py(baton_bind::convert::out_of_range(what, &repr(obj))));
        }
        // The usual TypeError for a float, a str, …
        Err(e) => return Err(e),
    };
    baton_bind::convert::int(what, v).map_err(to_py)
}

fn repr(obj: &Bound<'_, PyAny>) -> String {
    let s = obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".to_owned());
    if s.chars().count() > 40 { format!("{}…", s.chars().take(40).collect::<String>()) } else { s }
}

/// The keyword options every lock-like handle takes.
pub(crate) fn lock_options(
    ttl: Option<&Bound<'_, PyAny>>,
    lease: Option<&Bound<'_, PyAny>>,
    owner: Option<String>,
) -> PyResult<LockOptions> {
    let (ttl, lease) = (seconds("ttl", ttl)?, seconds("lease", lease)?);
    Ok(LockDurations { ttl, lease, owner, ..LockDurations::default() }.options())
}
