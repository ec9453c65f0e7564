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
                "f506ac9454e9b296c34ed26d8fc8e855be6fa47e",
                "7ccf25aa24287f3852780fe90c9ac21db34bff52",
                "d52415c1dcd502b6d6c676b5d77670e7b45c4022",
                "f18642070a96f559fb56de82446324803e1b256a",
                "1cd49826cb29a475e6d224a8a96dd44c3725d322",
                "db4f85b90d2874a3c073e6b1a6839870ca723b6f",
                "4407711d34e0b29c6874886dd71226b1ae163d2c",
                "042a7c8897993d01d29a79c2bc5eec96f0733bf2",
                "7ec6f1ef9137e6a922406d9dde086703142a5121",
                "b392e1e709adbd69b4b4ce0cba50ae427236b1cf",
                "b87aaf2f1aa7a57726f5617aeb20ab1b9b848bb1",
                "c958de8a35ba18d58517afd51889217107be0663",
                "762c7b116562d27f532fda8693bc025b31e51682",
                "43b14ccc6334cd2040f5dcc6c8cff8155d5a623c",
                "fbf96d9fb86ebd70414e99c745ac7ba82e57cfd2",
                "dc173faa40d3be32d9a594893cc549dd2773045e",
                "e9414df335746620454a4a7f9ca7f32a1e099d54",
                "f78cccc253c5f8ff03eb8a7251c4558cff1e0012",
                "afd42ba149ae6d874ddf984099a9fdc0e653e737",
                "a3844628f6ad395fc6fe2cfe1f0f83e1ab5f6526",
                "77c93ecc80e0a9e4c8d20baf6e0d67d82d6db9e2",
                "148fe65eb919c03cc5ba8faa137c6e8b6bb7b96c",
                "7cfdd85da540165a6886aba61f5671a3e45bb527",
                "88f9acb206dbb3d2017e3bb069afbc0e30ecae37",
                "3179b6c48bcc56d9deb475aae7ff43b533a7c85d",
                "6778fcefa25ad08d88b01907e33f7680b05d5faf",
            ]
        );
    }
}
