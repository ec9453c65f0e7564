//! The native library behind the JVM artifact `dev.baton:baton`: uniffi exports that
//! translate types, errors and async to and from the `baton` core and hold no lock logic.
//! uniffi generates the raw Kotlin layer (package `dev.baton.ffi`, `suspend` functions for
//! the async exports); the hand-written Kotlin in `src/main/kotlin/dev/baton/` wraps it in
//! the public API (Kotlin durations, `BatonException`, the Java blocking and future forms).
//!
//! Layout: one file per public noun (`client`, `lock`, `rw`, `semaphore`, `permits`,
//! `latch`, `multi`, `inspect`, `fence`), the guards (`guard`, over `baton_bind::Cell`), the
//! plumbing (`call`: every call on baton's runtime with panics contained, `errors`: the
//! error enum of the kinds), and the test hooks (`hooks`, `live`).

uniffi::setup_scaffolding!("baton_ffi");

pub(crate) mod call;
pub mod client;
pub mod errors;
pub mod fence;
pub mod guard;
pub mod hooks;
pub mod inspect;
pub mod latch;
pub mod live;
pub mod lock;
pub mod multi;
pub mod permits;
pub mod rw;
pub mod semaphore;

pub use errors::FfiError;
