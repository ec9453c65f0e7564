//! The native addon behind the npm package `baton`: it translates types, errors and async
//! to and from the `baton` core and holds no lock logic of its own. The TypeScript facade
//! (`ts/`) wraps these classes in the public API (BatonError, AbortSignal, asyncDispose).
//!
//! Layout: one file per public noun (`client`, `lock`, `rw`, `semaphore`, `permits`,
//! `latch`, `multi`, `inspect`), the guards (`guard`, over `baton_bind::Cell`), the
//! plumbing (`call`: the async bridge and cancel tokens, `errors`: core errors as
//! JavaScript errors with the kind as `code`, `convert`), the test hooks (`hooks`), and
//! the hot calls' fast path (`fast/`, cargo feature `fast`).
#![allow(clippy::new_without_default)]

pub mod call;
pub mod client;
mod convert;
pub mod errors;
#[cfg(feature = "fast")]
mod fast;
pub mod fence;
mod guard;
pub mod hooks;
mod inspect;
mod latch;
mod lock;
mod multi;
mod permits;
mod rw;
mod semaphore;

/// napi's runtime polls every call (`call::run`) and the background work (watchdogs,
/// releases of dropped guards) of the clients made from JavaScript. One worker: the calls
/// come from one JavaScript thread and wait on I/O, and on small machines a second worker
/// mostly adds wake-ups between threads (measured with `bench/bench.mjs`).
#[napi_derive::module_init]
fn init() {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).thread_name("baton-napi").enable_all().build();
    // On failure napi builds its default runtime on first use instead.
    if let Ok(rt) = rt {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}
