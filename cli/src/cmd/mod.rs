//! The subcommands.

pub(crate) mod bench;
pub(crate) mod demo;
pub(crate) mod inspect;
pub(crate) mod lab;
pub(crate) mod run;
