//! Guards: `LockGuard`, `Permit`, `MultiGuard`. Each wraps a `baton_bind::Cell`;
//! `release()` twice is `NotHeld`, `dispose()` (the facade's `Symbol.asyncDispose`)
//! releases unless released already. When the JavaScript object is freed the cell is
//! dropped, and the core releases a guard dropped unreleased in the background.

use std::sync::Arc;

use baton_bind::{Cell, HeldPermit};
use js_sys::{Array, BigInt, Function, Promise};
use wasm_bindgen::prelude::*;

use crate::call::promise;
use crate::convert::{count, ms};

/// Calls `callback` once when `cell`'s lease is lost; never after release.
fn on_lost<G: baton_bind::CoreGuard>(cell: &Cell<G>, callback: Function) {
    let lost = cell.lost();
    wasm_bindgen_futures::spawn_local(async move {
        if lost.await {
            // A throwing callback is the page's business, not the lease's.
            let _ = callback.call0(&JsValue::UNDEFINED);
        }
    });
}

/// The methods every guard class shares, over its `cell` field or the path given.
macro_rules! guard_methods {
    ($Js:ident) => {
        guard_methods!($Js, cell);
    };
    ($Js:ident, $($cell:ident).+) => {
        #[wasm_bindgen]
        impl $Js {
            /// Releases; rejects with `LockLost` if the lease had been lost, `NotHeld` if this
            /// guard was released already.
            pub fn release(&self) -> Promise {
                let cell = self.$($cell).+.clone();
                promise(async move { cell.release(true).await.map(|()| JsValue::UNDEFINED) })
            }

            /// Releases unless released already (what `Symbol.asyncDispose` calls).
            pub fn dispose(&self) -> Promise {
                let cell = self.$($cell).+.clone();
                promise(async move { cell.release(false).await.map(|()| JsValue::UNDEFINED) })
            }

            /// Whether `release()` (or `dispose()`) was called.
            #[wasm_bindgen(getter)]
            pub fn released(&self) -> bool {
                self.$($cell).+.is_released()
            }

            /// Whether the lease is known to be lost.
            #[wasm_bindgen(getter = isLost)]
            pub fn is_lost(&self) -> bool {
                self.$($cell).+.is_lost()
            }

            /// Calls `callback` once when the lease is lost (never after release).
            #[wasm_bindgen(js_name = onLost)]
            pub fn on_lost(&self, callback: Function) {
                on_lost(&self.$($cell).+, callback);
            }
        }
    };
}

/// Sets the lease of what `cell` holds to `leaseMs` from now.
fn extend<G: baton_bind::Extend + 'static>(cell: &Arc<Cell<G>>, lease_ms: f64) -> Promise {
    let cell = cell.clone();
    promise(async move { cell.extend(ms("leaseMs", lease_ms)?).await.map(|()| JsValue::UNDEFINED) })
}

/// A held lock, read or write hold.
#[wasm_bindgen]
pub struct LockGuard {
    cell: Arc<Cell<baton::LockGuard>>,
    token: u64,
    name: String,
    owner: String,
}

impl LockGuard {
    pub(crate) fn new(g: baton::LockGuard) -> LockGuard {
        let (token, name, owner) = (g.token().get(), g.name().to_owned(), g.owner().to_owned());
        LockGuard { cell: Cell::new(g, format!("`{name}`")), token, name, owner }
    }
}

#[wasm_bindgen]
impl LockGuard {
    /// The fencing token of this grant (a bigint).
    #[wasm_bindgen(getter)]
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The name held.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The owner id the grant is held under.
    #[wasm_bindgen(getter)]
    pub fn owner(&self) -> String {
        self.owner.clone()
    }

    /// Sets the lease to `leaseMs` from now.
    pub fn extend(&self, lease_ms: f64) -> Promise {
        extend(&self.cell, lease_ms)
    }
}

guard_methods!(LockGuard);

/// Permits of a semaphore (or one permit of a permit semaphore).
#[wasm_bindgen]
pub struct Permit {
    held: HeldPermit,
}

impl Permit {
    pub(crate) fn new(p: baton::Permit) -> Permit {
        Permit { held: HeldPermit::permit(p) }
    }
}

#[wasm_bindgen]
impl Permit {
    /// The fencing token of this grant.
    #[wasm_bindgen(getter)]
    pub fn token(&self) -> u64 {
        self.held.data.token
    }

    /// The permit's id.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.held.data.id.clone()
    }

    /// The semaphore's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.held.data.name.clone()
    }

    /// Permits still held by this guard (0 once released).
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> u32 {
        self.held.count()
    }

    /// Gives back `n` of the permits held, keeping the rest.
    #[wasm_bindgen(js_name = releaseMany)]
    pub fn release_many(&self, n: f64) -> Promise {
        let release = self.held.release_many(count("n", n));
        promise(async move { release.await.map(|()| JsValue::UNDEFINED) })
    }

    /// Sets the lease to `leaseMs` from now.
    pub fn extend(&self, lease_ms: f64) -> Promise {
        extend(&self.held.cell, lease_ms)
    }
}

guard_methods!(Permit, held.cell);

/// All the locks of a multi-lock, held together.
#[wasm_bindgen]
pub struct MultiGuard {
    cell: Arc<Cell<baton::MultiGuard>>,
    tokens: Vec<u64>,
    names: Vec<String>,
}

impl MultiGuard {
    pub(crate) fn new(g: baton::MultiGuard) -> MultiGuard {
        let tokens = g.tokens().iter().map(|t| t.get()).collect();
        let names: Vec<String> = g.guards().iter().map(|g| g.name().to_owned()).collect();
        let what = format!("the multi-lock over {}", names.join(", "));
        MultiGuard { cell: Cell::new(g, what), tokens, names }
    }
}

#[wasm_bindgen]
impl MultiGuard {
    /// One fencing token per lock, in the order of `names` (an array of bigints).
    #[wasm_bindgen(getter)]
    pub fn tokens(&self) -> Array {
        self.tokens.iter().map(|t| JsValue::from(BigInt::from(*t))).collect()
    }

    /// The names held.
    #[wasm_bindgen(getter)]
    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }
}

guard_methods!(MultiGuard);
