//! Binding support: what the language bindings (Python, Node, the JVM, the browser) need
//! from the core beyond the public API. Nothing here holds lock logic.
//!
//! - [`LockExt`]: the poison-tolerant lock every binding uses for its own state (a panic
//!   must never cross an FFI boundary, so a poisoned mutex must not start one).
//! - [`crate::rt`]: the shared runtime and panic containment for callers with no runtime.
//! - `DrivenLink` and [`driven_link`] (feature `driven-link`): a second connection to a
//!   plain `redis://` server whose socket the binding's own event loop drives. The Node
//!   binding uses it for its hot calls; see ARCHITECTURE.md, "When a binding may own an
//!   executor".
//! - [`drive_here`] (feature `driven-link`): runs a host thread's blocking call with that
//!   thread doing the call's Redis I/O itself, on a connection of its own (the JVM's
//!   blocking calls, Python's synchronous API).

pub use crate::sync::LockExt;

#[cfg(feature = "driven-link")]
pub use crate::store::{DrivenLink, drive_here};

/// A [`DrivenLink`] to `client`'s store: `Some` on a plain `redis://` server, `None` on
/// every other store (and on TLS, cluster and sentinel URLs).
///
/// # Errors
/// `Connection` when the second connection cannot be opened.
#[cfg(feature = "driven-link")]
pub async fn driven_link(client: &crate::client::Client) -> crate::error::Result<Option<DrivenLink>> {
    client.store().driven_link().await
}
