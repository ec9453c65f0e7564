//! What every language binding of baton needs alike, kept free of any binding framework
//! (pyo3, napi, uniffi, wasm-bindgen) so that each binding adds only its own glue:
//!
//! - [`cell`]: the core guard behind a guard object of the host language, which a
//!   release empties (a host object cannot be consumed as `release(self)` is);
//! - [`held`]: that cell plus a snapshot of the grant's fields ([`HeldPermit`] for a
//!   permit, its count kept in step by `release_many`);
//! - [`kind`]: the error kind names, taken from the core's [`baton::ErrorKind::ALL`];
//!   [`with_error_kinds!`] passes them as identifiers to a macro (uniffi's error enum);
//! - [`convert`]: host numbers to durations, counts and lock options, and counts back to
//!   numbers a JavaScript `number` holds exactly, with the core's `InvalidArgument` errors.

pub mod cell;
pub mod convert;
pub mod held;
pub mod kind;

pub use cell::{Cell, CoreGuard, Extend, any_lost};
pub use held::{Held, HeldPermit, PermitData};
