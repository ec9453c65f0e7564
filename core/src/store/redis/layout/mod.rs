//! The data layouts, one file each, as Redisson cuts its objects: each holds its keys, its
//! scripts (the `.lua` files of `../lua/`, run by SHA) and the decoding of their replies.
//! Every state change of a primitive is one script, run atomically by the server on its
//! clock (`TIME`), except where `?clock=client` passes the caller's (`Clock`). Which
//! layout serves locks and semaphores is chosen once, at open (`LockLayout`, `SemLayout`).

/// A script: its `.lua` parts joined, each after a newline (the layout of the script text
/// is part of its SHA, which must not change between versions).
macro_rules! lua {
    ($($part:literal),+) => {
        $crate::store::redis::layout::Lua::new(concat!($("\n", include_str!(concat!("../lua/", $part, ".lua"))),+))
    };
}

pub(super) mod fair;
pub(super) mod fence;
pub(super) mod guarded;
pub(super) mod latch;
pub(super) mod lock;
pub(super) mod rsemaphore;
pub(super) mod rwlock;
pub(super) mod semaphore;
pub(super) mod simple;

use std::time::Duration;

use super::config::{Free, SemLayout};
use super::keys;
pub(crate) use super::script::Lua;

/// Every script, for loading them all at once.
pub(crate) static ALL: [&Lua; 26] = [
    &lock::ACQUIRE,
    &lock::RELEASE,
    &lock::RENEW,
    &fair::LEAVE,
    &lock::INSPECT,
    &rwlock::ACQUIRE,
    &rwlock::RELEASE,
    &rwlock::RENEW,
    &rwlock::LEAVE,
    &rwlock::INSPECT,
    &semaphore::ACQUIRE,
    &semaphore::RELEASE,
    &semaphore::RENEW,
    &semaphore::INSPECT,
    &latch::SET,
    &latch::DOWN,
    &simple::ACQUIRE,
    &simple::RELEASE,
    &simple::RENEW,
    &simple::INSPECT,
    &rsemaphore::ACQUIRE,
    &rsemaphore::RELEASE,
    &rsemaphore::RENEW,
    &rsemaphore::INSPECT,
    &fence::RAISE,
    &guarded::WRITE,
];

impl SemLayout {
    /// The layout `holder`'s permits live in: a permit id (`PermitSemaphore`) keeps the
    /// leased layout under either option.
    pub(super) fn of(self, holder: &str) -> SemLayout {
        if keys::is_permit_id(holder) { SemLayout::Leased } else { self }
    }
}

/// A release script's keys: `keys`, then the name's token counter unless `?free=keep` (the
/// script forgets a free name's state only when it is given the counter).
fn release_keys<'a>(keys: &[&'a str], counter: &'a str, free: Free) -> Vec<&'a [u8]> {
    let mut all: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    if free == Free::Drop {
        all.push(counter.as_bytes());
    }
    all
}

/// An acquire's arguments, then the request's token floor if it has one (the marker and
/// the floor that `token.lua`'s `next_token` reads last).
fn acquire_args<'a>(args: &[&'a [u8]], floor: &'a Option<String>) -> Vec<&'a [u8]> {
    let mut all = args.to_vec();
    if let Some(f) = floor {
        all.extend([b"\0token-floor".as_slice(), f.as_bytes()]);
    }
    all
}

/// A request's token floor as its script argument.
fn floor_arg(req: &crate::state::Request) -> Option<String> {
    req.token_floor.map(|f| f.to_string())
}

/// A lease or ttl argument in ms.
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The count argument of the release scripts (0: every hold).
fn count_arg(count: u32) -> String {
    if count == u32::MAX { 0 } else { count }.to_string()
}

#[cfg(test)]
mod tests {
    /// The scripts' SHA1s: a changed byte of any script changes its SHA, which the
    /// servers' script caches and other clients' `EVALSHA` see.
    #[test]
    fn script_text_is_unchanged() {
        let shas: Vec<&str> = super::ALL.iter().map(|l| l.sha()).collect();
        assert_eq!(
            shas,
            [
                "555d280ce9b5f2ef19d09d24518a12f16834be5d",
                "acb8fc6964c10252098ad279296b881c5012c92d",
                "d52415c1dcd502b6d6c676b5d77670e7b45c4022",
                "f18642070a96f559fb56de82446324803e1b256a",
                "1cd49826cb29a475e6d224a8a96dd44c3725d322",
                "470d144719860cdd5957c6f8fcd7282e4b55a7a8",
                "bd9666c674779dafcfca4c3fa9d0ad0d52e4a11b",
                "042a7c8897993d01d29a79c2bc5eec96f0733bf2",
                "7ec6f1ef9137e6a922406d9dde086703142a5121",
                "b392e1e709adbd69b4b4ce0cba50ae427236b1cf",
                "94792c323358b84ba205d635a4acb9aef484f5ea",
                "bc6ee043aa63d3df49ec1c244f56e6bb499774de",
                "762c7b116562d27f532fda8693bc025b31e51682",
                "43b14ccc6334cd2040f5dcc6c8cff8155d5a623c",
                "fbf96d9fb86ebd70414e99c745ac7ba82e57cfd2",
                "dc173faa40d3be32d9a594893cc549dd2773045e",
                "ff368611fd93b2325654a9851ecb1a35e8b18dc3",
                "684c514904ce6b304f0e7fc19b7fb61af0603667",
                "afd42ba149ae6d874ddf984099a9fdc0e653e737",
                "a3844628f6ad395fc6fe2cfe1f0f83e1ab5f6526",
                "6908f59aaf43f039699573bfce3aa378f8d818ee",
                "c954bedb426ebd9904ec10a75c4a381702b26d9b",
                "7cfdd85da540165a6886aba61f5671a3e45bb527",
                "88f9acb206dbb3d2017e3bb069afbc0e30ecae37",
                "3179b6c48bcc56d9deb475aae7ff43b533a7c85d",
                "6778fcefa25ad08d88b01907e33f7680b05d5faf",
            ]
        );
    }
}
