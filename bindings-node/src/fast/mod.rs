//! The hot calls' fast path (cargo feature `fast`, on by default). Without it every call
//! takes napi's own future-to-promise bridge (`call::hot`).
//!
//! - `here`: on a plain `redis://` server, acquire, tryAcquire and release are polled on
//!   the JavaScript thread over a second Redis connection (the core's
//!   `baton::ffi::DrivenLink`) whose socket libuv watches (`uv`): no thread crossing, as
//!   with node-redlock's ioredis. The gain is the uncontended single-task rate on that one
//!   kind of store; TLS, cluster, sentinel and every other store have no link.
//! - `settle`: elsewhere (and past a few calls in flight on a link) the hot calls run on
//!   napi's runtime and settle through one threadsafe function per environment instead of
//!   one made and closed per call.
//! - `busy`: while such calls are in flight, and briefly after, napi's worker spins
//!   instead of sleeping, saving a thread wake-up on the next call's answer.
//!
//! `BATON_NODE_DRIVEN_LINK=0` turns the link off and `BATON_NODE_BUSY_POLL_US=0` the
//! spinning (for comparisons).

mod busy;
mod here;
mod settle;
mod uv;

pub(crate) use here::{Link, promise};
