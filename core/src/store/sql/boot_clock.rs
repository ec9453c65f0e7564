//! The lease clock of a SQLite file: `CLOCK_BOOTTIME` (monotonic, system-wide, counting
//! suspend), so that leases between processes of one machine survive a step of the wall
//! clock (NTP, an admin's `date -s`, a VM resumed): a process whose wall clock jumps ahead
//! must not see a live lease as expired.
//!
//! `CLOCK_BOOTTIME` starts again at zero on every boot, while a file keeps its leases
//! across one. So the file holds, per boot (`/proc/sys/kernel/random/boot_id`), a base
//! added to it: on a boot the file has not seen, the base moves `BOOT_SKIP` past the
//! previous one, so every lease written before the reboot (whose holders died with it)
//! has expired. A file from before this clock (expiries on the wall clock, ms since
//! 1970) gets a first base `BOOT_SKIP` past the wall clock, with the same effect.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::SqlitePool;

/// Longer than any uptime plus any lease.
const BOOT_SKIP: u64 = 10 * 365 * 86_400_000;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS baton_clock (
    id   INTEGER PRIMARY KEY CHECK (id = 0),
    boot TEXT    NOT NULL,
    base INTEGER NOT NULL
)";

/// Milliseconds on this file's lease clock: `base` + `CLOCK_BOOTTIME`.
pub(crate) fn now_ms(base: u64) -> u64 {
    base.saturating_add(u64::try_from(boottime().as_millis()).unwrap_or(u64::MAX))
}

/// This file's base for this boot, recorded on first use (in one write transaction, so
/// processes opening the file together agree).
pub(crate) async fn base(pool: &SqlitePool) -> Result<u64, sqlx::Error> {
    sqlx::query(SCHEMA).execute(pool).await?;
    let boot = boot_id();
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let row: Option<(String, i64)> =
        sqlx::query_as("SELECT boot, base FROM baton_clock WHERE id = 0").fetch_optional(&mut *tx).await?;
    let base = match row {
        Some((b, base)) if b == boot => u64::try_from(base).unwrap_or(0),
        Some((_, base)) => u64::try_from(base).unwrap_or(0).saturating_add(BOOT_SKIP),
        None => wall_ms().saturating_add(BOOT_SKIP),
    };
    sqlx::query("INSERT INTO baton_clock (id, boot, base) VALUES (0, ?, ?) ON CONFLICT (id) DO UPDATE SET boot = excluded.boot, base = excluded.base")
        .bind(&boot)
        .bind(i64::try_from(base).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(base)
}

/// `CLOCK_BOOTTIME`, or the wall clock where there is none (not Linux).
fn boottime() -> Duration {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write into.
        if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } == 0 {
            let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
            return Duration::new(secs, u32::try_from(ts.tv_nsec).unwrap_or(0));
        }
    }
    Duration::from_millis(wall_ms())
}

/// This boot's id (Linux), or a constant where the system has none to read: the base
/// then never moves, as with the wall clock it stands for.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map_or_else(|_| "wall-clock".into(), |s| s.trim().into())
}

fn wall_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
