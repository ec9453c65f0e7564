//! The subcommands.

pub(crate) mod bench;
pub(crate) mod demo;
// `baton run`'s process tree: Linux's subreaper and cgroup; elsewhere what the platform
// gives (group_portable.rs, docs/platforms.md).
#[cfg(target_os = "linux")]
mod group;
#[cfg(not(target_os = "linux"))]
#[path = "group_portable.rs"]
mod group;
pub(crate) mod inspect;
pub(crate) mod lab;
pub(crate) mod run;
