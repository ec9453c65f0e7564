//! The native addon behind the npm package `baton`: it translates types, errors and async
//! to and from the `baton` core and holds no lock logic of its own. The TypeScript facade
//! (`ts/`) wraps these classes in the public API (BatonError, AbortSignal, asyncDispose).
//!
//! Layout: one file per public noun (`client`, `lock`, `rw`, `semaphore`, `permits`,
//! `latch`, `multi`, `inspect`), the guards (`guard`, `cell`), and the plumbing
//! (`call`: the async bridge and cancel tokens, `settle`: the promises of the hot calls,
//! `busy`: the busy-poll window that keeps napi's worker awake around them, `here`: the
//! same calls polled on the JavaScript thread over a Redis link libuv watches (`uv`),
//! `errors`, `convert`).
#![allow(clippy::new_without_default)]

mod busy;
pub mod call;
mod cell;
pub mod client;
mod convert;
pub mod errors;
mod guard;
mod here;
mod inspect;
mod latch;
mod lock;
mod multi;
mod permits;
mod rw;
mod semaphore;
mod settle;
mod uv;

/// napi's runtime polls every call (`call::run`) and the background work (watchdogs,
/// releases of dropped guards) of the clients made from JavaScript. One worker: the calls
/// come from one JavaScript thread and wait on I/O, and on small machines a second worker
/// mostly adds wake-ups between threads (see BENCHMARKS.md, Node).
#[napi_derive::module_init]
fn init() {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).thread_name("baton-napi").enable_all().build();
    // On failure napi builds its default runtime on first use instead.
    if let Ok(rt) = rt {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}
