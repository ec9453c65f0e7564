//! The one error type of baton, and the kinds every binding maps to its own classes.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// What went wrong, as a closed set every language binding maps one to one
/// (Python exception classes, Node `BatonError.code`, Kotlin exceptions).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A name, duration, permit count or option was out of range.
    InvalidArgument,
    /// The store URL could not be parsed or names an unknown scheme.
    InvalidUrl,
    /// Waiting for a grant took longer than the caller allowed.
    Timeout,
    /// The caller released or extended something it does not hold.
    NotHeld,
    /// The lease behind a guard expired or was taken over before release.
    LockLost,
    /// The store could not be reached or the connection broke.
    Connection,
    /// The store answered with an error, or an internal step failed.
    Backend,
    /// The client was closed.
    Closed,
    /// The store (or this build) cannot do what was asked.
    Unsupported,
}

impl ErrorKind {
    /// Every kind, in declaration order (bindings test their mapping against this list).
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::InvalidArgument,
        ErrorKind::InvalidUrl,
        ErrorKind::Timeout,
        ErrorKind::NotHeld,
        ErrorKind::LockLost,
        ErrorKind::Connection,
        ErrorKind::Backend,
        ErrorKind::Closed,
        ErrorKind::Unsupported,
    ];

    /// The name used by every binding: Node's `code`, the Python and Kotlin class stem.
    ///
    /// ```
    /// assert_eq!(baton::ErrorKind::LockLost.as_str(), "LockLost");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "InvalidArgument",
            ErrorKind::InvalidUrl => "InvalidUrl",
            ErrorKind::Timeout => "Timeout",
            ErrorKind::NotHeld => "NotHeld",
            ErrorKind::LockLost => "LockLost",
            ErrorKind::Connection => "Connection",
            ErrorKind::Backend => "Backend",
            ErrorKind::Closed => "Closed",
            ErrorKind::Unsupported => "Unsupported",
        }
    }

    /// The kind named `s` (the inverse of [`ErrorKind::as_str`]).
    pub fn from_name(s: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of every fallible baton operation: a [`ErrorKind`] plus a message that
/// never contains passwords from URLs, and the driver error behind it when there is one.
///
/// ```
/// use baton::{Client, ErrorKind};
/// # tokio_test_block(async {
/// let err = Client::connect("nope://x").await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::InvalidUrl);
/// # });
/// # fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    msg: Cow<'static, str>,
    source: Option<Arc<dyn StdError + Send + Sync>>,
}

/// `Result` with baton's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with `msg`.
    pub fn new(kind: ErrorKind, msg: impl Into<Cow<'static, str>>) -> Error {
        Error { kind, msg: msg.into(), source: None }
    }

    /// Attaches the underlying cause (kept for `source()`, not repeated in the message).
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Error {
        self.source = Some(Arc::new(source));
        self
    }

    /// The kind, for matching.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message without the kind prefix.
    pub fn message(&self) -> &str {
        &self.msg
    }

    pub(crate) fn invalid_argument(msg: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::InvalidArgument, msg)
    }
    /// A semaphore handle whose size differs from the one recorded while permits are held.
    pub(crate) fn semaphore_size(name: &str, size: u32, asked: u32) -> Error {
        Error::invalid_argument(format!(
            "semaphore `{name}` has {size} permits; this handle asked for {asked} (a semaphore's size is fixed \
             while any permit is held; release every permit to change it)"
        ))
    }
    pub(crate) fn invalid_url(msg: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::InvalidUrl, msg)
    }
    pub(crate) fn timeout(msg: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::Timeout, msg)
    }
    pub(crate) fn not_held(msg: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::NotHeld, msg)
    }
    pub(crate) fn lock_lost(msg: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::LockLost, msg)
    }
    // Network stores use it; a memory-only build has none.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")), allow(dead_code))]
    pub(crate) fn connection(msg: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::Connection, msg)
    }
    pub(crate) fn backend(msg: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::Backend, msg)
    }
    pub(crate) fn closed() -> Error {
        Error::new(ErrorKind::Closed, "the client is closed")
    }
    pub(crate) fn unsupported(msg: impl Into<Cow<'static, str>>) -> Error {
        Error::new(ErrorKind::Unsupported, msg)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.msg)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("msg", &self.msg);
        if let Some(s) = &self.source {
            d.field("source", &s.to_string());
        }
        d.finish()
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(k.as_str()), Some(k));
        }
        assert_eq!(ErrorKind::from_name("Nope"), None);
    }

    #[test]
    fn display_has_kind_and_message() {
        let e = Error::timeout("waited 5s for `a`");
        assert_eq!(e.to_string(), "Timeout: waited 5s for `a`");
        assert_eq!(e.kind(), ErrorKind::Timeout);
    }
}
