//! Guards: `LockGuard`, `Permit` (in `semaphore`), `MultiGuard` (in `multi`). Each wraps a
//! [`Cell`]; `release()` twice is `NotHeld`, `dispose()` (what Kotlin's `close()` calls)
//! releases unless released already. When the Kotlin object is freed without either, the
//! cell is dropped and the core releases the grant in the background.

use std::sync::Arc;

use baton_bind::Cell;

use crate::call;
use crate::errors::FfiError;
use crate::live::Live;

/// The methods every guard shares, over its `cell` field or the path given (a second exported impl block).
macro_rules! guard_methods {
    ($T:ident) => {
        $crate::guard::guard_methods!($T, cell);
    };
    ($T:ident, $($cell:ident).+) => {
        #[uniffi::export]
        impl $T {
            /// Releases; fails with `LockLost` if the lease had been lost, `NotHeld` if this
            /// guard was released already.
            pub async fn release(&self) -> Result<(), $crate::errors::FfiError> {
                $crate::call::run(self.$($cell).+.clone().release(true)).await
            }

            /// Releases unless released already.
            pub async fn dispose(&self) -> Result<(), $crate::errors::FfiError> {
                $crate::call::run(self.$($cell).+.clone().release(false)).await
            }

            /// [`release`](Self::release), blocking the calling thread (`call::block`).
            pub fn release_blocking(&self) -> Result<(), $crate::errors::FfiError> {
                $crate::call::block(self.$($cell).+.clone().release(true))
            }

            /// [`dispose`](Self::dispose), blocking the calling thread (`call::block`).
            pub fn dispose_blocking(&self) -> Result<(), $crate::errors::FfiError> {
                $crate::call::block(self.$($cell).+.clone().release(false))
            }

            /// Whether `release()` (or `dispose()`) was called.
            pub fn is_released(&self) -> bool {
                self.$($cell).+.is_released()
            }

            /// Whether the lease is known to be lost.
            pub fn is_lost(&self) -> bool {
                self.$($cell).+.is_lost()
            }

            /// Resolves to true when the lease is lost, false once released or freed first.
            pub async fn lost(&self) -> bool {
                let lost = self.$($cell).+.lost();
                $crate::call::run(async move { Ok(lost.await) }).await.unwrap_or(false)
            }
        }
    };
}
pub(crate) use guard_methods;

/// A held lock, read or write hold.
#[derive(uniffi::Object)]
pub struct LockGuard {
    cell: Arc<Cell<baton::LockGuard>>,
    token: u64,
    name: String,
    owner: String,
    _live: Live,
}

impl LockGuard {
    pub(crate) fn new(g: baton::LockGuard) -> Arc<LockGuard> {
        let (token, name, owner) = (g.token().get(), g.name().to_owned(), g.owner().to_owned());
        Arc::new(LockGuard { cell: Cell::new(g, format!("`{name}`")), token, name, owner, _live: Live::new() })
    }
}

#[uniffi::export]
impl LockGuard {
    /// The fencing token of this grant.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The name held.
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The owner id the grant is held under.
    pub fn owner(&self) -> String {
        self.owner.clone()
    }

    /// Sets the lease to `lease_ms` from now.
    pub async fn extend(&self, lease_ms: f64) -> Result<(), FfiError> {
        let cell = self.cell.clone();
        call::run(async move { cell.extend(call::millis("lease", lease_ms)?).await }).await
    }
}

guard_methods!(LockGuard);
