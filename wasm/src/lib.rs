//! baton for wasm32 (wasm-bindgen): the same native interface as the Node addon
//! (`bindings-node/src`), so the Node package's TypeScript facade (`bindings-node/ts`,
//! compiled by `scripts/package wasm`) is the JavaScript API here too: `connect`, locks,
//! guards with `token`/`signal`/`Symbol.asyncDispose`, `BatonError` with the same codes.
//!
//! Stores: `memory://` (handles in one page contend) and `etcd+http://`/`etcd+https://`
//! (etcd's JSON gateway over `fetch`). The core's background work (watchdog renewals,
//! releases of dropped guards) runs on the page's event loop through the core's runtime
//! seam (`baton::rt`).
//!
//! Layout as the Node addon's: `call` (promises, errors, cancel tokens, panics),
//! `client`, `lock` (Lock, FairLock, RwLock), `guard` (LockGuard, Permit, MultiGuard),
//! `semaphore`, `latch`, `multi`, `inspect`, `convert`, `hooks`.
#![allow(clippy::new_without_default)]

pub mod call;
pub mod client;
mod convert;
mod guard;
pub mod hooks;
mod inspect;
mod latch;
mod lock;
mod multi;
mod semaphore;

use wasm_bindgen::prelude::*;

/// Runs when the module is instantiated: panics become rejections (see `call`).
#[wasm_bindgen(start)]
pub fn start() {
    call::catch_panics();
}
