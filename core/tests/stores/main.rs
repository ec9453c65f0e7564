//! The tests across stores, one binary: the behaviour suite on `memory://`,
//! what a release leaves behind, fencing tokens, fenced resources, URLs, a holder cut off.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

mod cut_holder;
mod fence;
mod memory;
mod residue;
mod tokens;
mod urls;
