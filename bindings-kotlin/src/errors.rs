//! The uniffi error: one variant per kind of the core, from `baton_bind::with_error_kinds!`
//! (so no kind is named here). uniffi's Kotlin makes it `FfiException` with a nested class
//! per variant (`FfiException.Timeout`); the hand-written layer turns it into the public
//! `BatonException` of the same kind. The message is the core's (passwords redacted).

use std::fmt;

macro_rules! ffi_error {
    ($($kind:ident),*) => {
        /// A failed call: the variant is the core's kind, the field its message.
        #[derive(Debug, uniffi::Error)]
        #[uniffi(flat_error)]
        pub enum FfiError {
            $(
                #[allow(missing_docs)]
                $kind(String),
            )*
        }

        impl From<baton::Error> for FfiError {
            fn from(e: baton::Error) -> FfiError {
                let msg = e.message().to_owned();
                match e.kind().as_str() {
                    $(stringify!($kind) => FfiError::$kind(msg),)*
                    // A kind the list does not have yet (the list is tested against the core).
                    other => FfiError::Backend(format!("{other}: {msg}")),
                }
            }
        }

        impl fmt::Display for FfiError {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $(FfiError::$kind(msg))|* => f.write_str(msg),
                }
            }
        }
    };
}

baton_bind::with_error_kinds!(ffi_error);

impl std::error::Error for FfiError {}
