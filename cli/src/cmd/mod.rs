//! The subcommands.

pub(crate) mod bench;
pub(crate) mod demo;
mod group;
pub(crate) mod inspect;
pub(crate) mod lab;
pub(crate) mod run;
