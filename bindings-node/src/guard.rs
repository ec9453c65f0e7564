//! Guards: `LockGuard`, `Permit` (in `semaphore`), `MultiGuard` (in `multi`). Each wraps a
//! [`Cell`]; `release()` twice is `NotHeld`, `dispose()` (the facade's
//! `Symbol.asyncDispose`) releases unless released already. When the JavaScript object is
//! collected the cell is dropped, and the core releases a guard dropped unreleased in the
//! background.

use std::sync::Arc;

use baton_bind::Cell;
use napi::bindgen_prelude::BigInt;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

use crate::call;
use crate::errors::Answer;

/// A loss callback that does not keep Node's event loop alive (a weak threadsafe function).
pub(crate) type LostCallback = ThreadsafeFunction<(), napi::Unknown<'static>, (), napi::Status, false, true>;

/// Calls `callback` once when `cell`'s lease is lost; never after release or collection.
pub(crate) fn on_lost<G: baton_bind::CoreGuard>(cell: &Cell<G>, callback: LostCallback) {
    let lost = cell.lost();
    baton::rt::global().spawn(async move {
        if lost.await {
            callback.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    });
}

/// The methods every guard class shares, over its `cell` field (or the path given) and its `driven()` link (a second `#[napi] impl`
/// block: napi does not expand macros inside one).
macro_rules! guard_methods {
    ($Js:ident) => {
        $crate::guard::guard_methods!($Js, cell);
    };
    ($Js:ident, $($cell:ident).+) => {
        #[napi_derive::napi]
        impl $Js {
            /// Releases; rejects with `LockLost` if the lease had been lost, `NotHeld` if this
            /// guard was released already.
            #[napi(ts_return_type = "Promise<void>")]
            pub fn release(&self, env: napi::Env) -> napi::Result<$crate::call::Promise> {
                $crate::call::hot(&env, self.driven(), $crate::call::run(self.$($cell).+.clone().release(true)))
            }

            /// Releases unless released already (what `Symbol.asyncDispose` calls).
            #[napi(ts_return_type = "Promise<void>")]
            pub fn dispose(&self, env: napi::Env) -> napi::Result<$crate::call::Promise> {
                $crate::call::hot(&env, self.driven(), $crate::call::run(self.$($cell).+.clone().release(false)))
            }

            /// Whether `release()` (or `dispose()`) was called.
            #[napi(getter, catch_unwind)]
            pub fn released(&self) -> bool {
                self.$($cell).+.is_released()
            }

            /// Whether the lease is known to be lost.
            #[napi(getter, catch_unwind)]
            pub fn is_lost(&self) -> bool {
                self.$($cell).+.is_lost()
            }

            /// Calls `callback` once when the lease is lost (never after release); the callback
            /// does not keep the process alive.
            #[napi(catch_unwind)]
            pub fn on_lost(&self, #[napi(ts_arg_type = "() => void")] callback: $crate::guard::LostCallback) {
                $crate::guard::on_lost(&self.$($cell).+, callback);
            }
        }
    };
}
pub(crate) use guard_methods;

/// A held lock, read or write hold.
#[napi]
pub struct LockGuard {
    cell: Arc<Cell<baton::LockGuard>>,
    token: u64,
    name: String,
    owner: String,
    /// The fast link of the handle that acquired it, if any (`fast`).
    link: Option<Arc<call::Link>>,
}

impl LockGuard {
    pub(crate) fn new(g: baton::LockGuard) -> LockGuard {
        LockGuard::over(g, None)
    }

    /// A guard whose release goes over `link` (as its acquire did).
    pub(crate) fn over(g: baton::LockGuard, link: Option<Arc<call::Link>>) -> LockGuard {
        let (token, name, owner) = (g.token().get(), g.name().to_owned(), g.owner().to_owned());
        LockGuard { cell: Cell::new(g, format!("`{name}`")), token, name, owner, link }
    }

    fn driven(&self) -> Option<&Arc<call::Link>> {
        self.link.as_ref()
    }
}

#[napi]
impl LockGuard {
    /// The fencing token of this grant.
    #[napi(getter, catch_unwind)]
    pub fn token(&self) -> BigInt {
        BigInt::from(self.token)
    }

    /// The name held.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The owner id the grant is held under.
    #[napi(getter, catch_unwind)]
    pub fn owner(&self) -> String {
        self.owner.clone()
    }

    /// Sets the lease to `leaseMs` from now.
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn extend(&self, lease_ms: f64) -> napi::Result<Answer<()>> {
        let cell = self.cell.clone();
        call::run(async move { cell.extend(crate::convert::ms("leaseMs", lease_ms)?).await }).await
    }
}

guard_methods!(LockGuard);
