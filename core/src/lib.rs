//! # baton
//!
//! Distributed locks, semaphores and latches with a fencing token on every grant, over
//! the store you already run, chosen by URL: `memory://`, `sqlite:///path/file.db` (the
//! embedded default), and, with their features, Redis, etcd, ZooKeeper and SQL servers.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::time::Duration;
//! use baton::{Client, ErrorKind, LockOptions};
//!
//! let client = Client::connect("memory://").await?;
//! let lock = client.lock("orders/42");
//! let guard = lock.acquire().await?;                        // watchdog lease
//! let token = guard.token().get();                          // fencing token
//!
//! let other = client.lock("orders/42");                     // another owner
//! assert!(other.try_acquire().await?.is_none());
//! let err = other.acquire_timeout(Duration::from_millis(50)).await.unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::Timeout);
//!
//! guard.release().await?;
//! let next = other.acquire().await?;
//! assert!(next.token().get() > token);                      // tokens only grow
//! next.release().await?;
//!
//! let short = client.lock_with("jobs/1", LockOptions::new().ttl(Duration::from_secs(10)));
//! let g = short.acquire().await?;
//! g.extend(Duration::from_secs(10)).await?;
//! g.release().await?;
//! client.close().await;
//! # Ok::<(), baton::Error>(()) }).unwrap();
//! ```
#![warn(missing_docs)]

mod client;
pub mod duration;
mod election;
mod engine;
mod error;
mod fence;
pub mod ffi;
mod inspect;
mod key;
mod latch;
mod lock;
mod name;
mod observe;
mod options;
mod owner;
pub mod rt;
mod semaphore;
mod state;
mod store;
mod sync;
mod token;
mod url;

pub use client::Client;
pub use election::{Election, LeaderInfo, LeaderWatch, Leadership, MAX_PROPOSAL_BYTES};
pub use error::{Error, ErrorKind, Result};
pub use fence::{Fence, Fenced, fenced_update};
pub use inspect::{Holder, Inspection};
pub use latch::CountDownLatch;
pub use lock::multi::{MultiGuard, MultiLock};
pub use lock::rw::RwLock;
pub use lock::{FairLock, Lock, LockGuard, LostSignal};
pub use name::{MAX_NAME_BYTES, validate as validate_name};
pub use options::{DEFAULT_LEASE, DEFAULT_QUEUE_TTL, DEFAULT_RENEW, Lease, LockOptions};
pub use semaphore::{Permit, PermitSemaphore, Semaphore};
pub use token::FencingToken;
pub use url::StoreUrl;

/// The Rust samples of this crate's README and the repository's, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
