//! The error kinds as data: each binding maps a core error to its own class or code by
//! the kind's name ([`baton::ErrorKind::as_str`]); none lists the kinds again.

use baton::{Error, ErrorKind};

/// The name of every kind of the core, in declaration order (Node's `errorCodes`, the
/// Python exception classes' stems).
pub fn names() -> Vec<&'static str> {
    ErrorKind::ALL.iter().map(|k| k.as_str()).collect()
}

/// The kind named `name` (`"Timeout"`, …), if the core has one.
pub fn named(name: &str) -> Option<ErrorKind> {
    ErrorKind::from_name(name)
}

/// `InvalidArgument` with `msg`, for bad input a binding itself finds (types, ranges).
pub fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, msg.into())
}

/// What the bindings' `_raise(name)` test hook fails with: an error of the kind named
/// `name`, or `InvalidArgument` for a name the core does not know. Each binding's tests
/// raise every name of [`names`] through it and check the class or code they get.
pub fn raised(name: &str) -> Error {
    match named(name) {
        Some(k) => Error::new(k, format!("raised by _raise({name:?})")),
        None => invalid(format!("unknown error kind {name:?}")),
    }
}

/// Calls `$m!` with the name of every kind of the core, in declaration order, for a binding
/// whose framework needs the kinds as identifiers (uniffi's error enum). The test below
/// keeps the list equal to [`ErrorKind::ALL`], so a kind added to the core fails here first.
#[macro_export]
macro_rules! with_error_kinds {
    ($m:ident) => {
        $m! { InvalidArgument, InvalidUrl, Timeout, NotHeld, LockLost, Connection, Backend, Closed, Unsupported }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! listed {
        ($($k:ident),*) => { vec![$(stringify!($k)),*] };
    }

    #[test]
    fn macro_lists_every_kind() {
        assert_eq!(with_error_kinds!(listed), names());
    }

    #[test]
    fn names_round_trip() {
        let names = names();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        for (name, kind) in names.iter().zip(ErrorKind::ALL) {
            assert_eq!(named(name), Some(kind));
            let e = raised(name);
            assert_eq!(e.kind(), kind);
            assert_eq!(e.message(), format!("raised by _raise(\"{name}\")"));
        }
        assert_eq!(raised("NoSuchKind").kind(), ErrorKind::InvalidArgument);
        assert_eq!(named("NoSuchKind"), None);
    }
}
