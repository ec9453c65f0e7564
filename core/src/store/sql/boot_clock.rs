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
//!
//! The `?scheme=` designs judge expiries in SQL: on SQLite they call `baton_now_ms()`, this
//! clock registered on each connection ([`register`]), not `julianday('now')` (the wall
//! clock, which a stepped process would read).

use std::ffi::{c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libsqlite3_sys as ffi;
use sqlx::SqliteConnection;

use sqlx::SqlitePool;

/// Longer than any uptime plus any lease.
const BOOT_SKIP: u64 = 10 * 365 * 86_400_000;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS baton_clock (
    id   INTEGER PRIMARY KEY CHECK (id = 0),
    boot TEXT    NOT NULL,
    base INTEGER NOT NULL
)";

const SELECT: &str = "SELECT boot, base FROM baton_clock WHERE id = 0";

/// Milliseconds on this file's lease clock: `base` + the host's `CLOCK_BOOTTIME`
/// ([`boottime`]); an error where this process cannot tell that clock.
pub(crate) fn now_ms(base: u64) -> Result<u64, String> {
    Ok(base.saturating_add(u64::try_from(boottime()?.as_millis()).unwrap_or(u64::MAX)))
}

/// Microseconds on this file's lease clock (its tokens count in these).
pub(crate) fn now_us(base: u64) -> Result<u64, String> {
    Ok(base.saturating_mul(1000).saturating_add(u64::try_from(boottime()?.as_micros()).unwrap_or(u64::MAX)))
}

/// This file's base for this boot, recorded on first use (in one write transaction, so
/// processes opening the file together agree).
pub(crate) async fn base(pool: &SqlitePool) -> Result<u64, sqlx::Error> {
    // Fail closed before any lease is judged: a process that cannot tell the host's clock
    // opens nothing.
    boottime().map_err(|e| sqlx::Error::Configuration(e.into()))?;
    sqlx::query(SCHEMA).execute(pool).await?;
    let boot = boot_id();
    // Most opens find this boot's base recorded: a read, no write lock (hundreds of
    // processes opening the file at once would queue for it).
    let row: Option<(String, i64)> = sqlx::query_as(SELECT).fetch_optional(pool).await?;
    if let Some((b, base)) = row
        && b == boot
    {
        return Ok(u64::try_from(base).unwrap_or(0));
    }
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let row: Option<(String, i64)> = sqlx::query_as(SELECT).fetch_optional(&mut *tx).await?;
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

/// Registers `baton_now_ms()` on `conn`: [`now_ms`] of the base `base` holds (set once the
/// file's base is read, before any statement calls it).
pub(crate) async fn register(conn: &mut SqliteConnection, base: Arc<AtomicU64>) -> Result<(), sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    let data = Arc::into_raw(base).cast_mut().cast::<c_void>();
    // SAFETY: `db` is this connection's open handle, locked for the call; `data` is an
    // `Arc` that SQLite hands back to `now_sql` while the function lives and to `drop_base`
    // once (also when the registration fails).
    let rc = unsafe {
        ffi::sqlite3_create_function_v2(
            db,
            c"baton_now_ms".as_ptr(),
            0,
            ffi::SQLITE_UTF8,
            data,
            Some(now_sql),
            None,
            None,
            Some(drop_base),
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(sqlx::Error::Protocol(format!("cannot register baton_now_ms() on SQLite (code {rc})")))
    }
}

/// `baton_now_ms()`, or an SQL error where the clock cannot be told: no panic can happen
/// here (saturating arithmetic).
unsafe extern "C" fn now_sql(ctx: *mut ffi::sqlite3_context, _argc: c_int, _argv: *mut *mut ffi::sqlite3_value) {
    // SAFETY: the user data is the `Arc<AtomicU64>` given in `register`, alive until
    // `drop_base`, which SQLite calls only after the function's last use.
    let base = unsafe { &*ffi::sqlite3_user_data(ctx).cast::<AtomicU64>() };
    match now_ms(base.load(Ordering::Acquire)) {
        Ok(now) => {
            // SAFETY: `ctx` is the context of this call.
            unsafe { ffi::sqlite3_result_int64(ctx, i64::try_from(now).unwrap_or(i64::MAX)) };
        }
        Err(e) => {
            let len = c_int::try_from(e.len()).unwrap_or(c_int::MAX);
            // SAFETY: `ctx` is the context of this call; SQLite copies the message (length
            // given, so it needs no NUL).
            unsafe { ffi::sqlite3_result_error(ctx, e.as_ptr().cast(), len) };
        }
    }
}

unsafe extern "C" fn drop_base(p: *mut c_void) {
    // SAFETY: `p` is the pointer `register` made with `Arc::into_raw`, dropped once.
    drop(unsafe { Arc::from_raw(p.cast_const().cast::<AtomicU64>()) });
}

/// The host's `CLOCK_BOOTTIME` (the initial time namespace's), or the wall clock where
/// there is none (not Linux).
///
/// A process in another Linux time namespace (`unshare --time --boottime`, a container
/// CRIU restored) reads `CLOCK_BOOTTIME` offset by its namespace's boottime offset: a clock
/// 60 s ahead would see every lease of 60 s or less as expired (two holders). The offset
/// is read from `/proc/self/timens_offsets` (relative to the host, however deep the
/// nesting) and taken off, so every process of the machine reads one clock. It is read on
/// every call, and a change from the one this process saw first (a process restored into
/// another namespace, whose file base may be another boot's) is an error, as is an offset
/// that cannot be read where the kernel has time namespaces: fail closed, never a guess.
fn boottime() -> Result<Duration, String> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let offset = timens::checked_offset()?;
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write into.
        if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } == 0 {
            let ns = i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec) - offset;
            let ns = u64::try_from(ns.max(0)).unwrap_or(u64::MAX);
            return Ok(Duration::from_nanos(ns));
        }
    }
    Ok(Duration::from_millis(wall_ms()))
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod timens {
    use std::sync::OnceLock;

    const OFFSETS: &str = "/proc/self/timens_offsets";

    /// The boottime offset of this process's time namespace in ns, checked against the one
    /// it saw first.
    pub(super) fn checked_offset() -> Result<i128, String> {
        static FIRST: OnceLock<Result<Option<i128>, String>> = OnceLock::new();
        // `None`: the kernel has no time namespaces (nothing to read, ever).
        let Some(first) = FIRST.get_or_init(read).clone()? else { return Ok(0) };
        let now = read()?.unwrap_or(0);
        if now != first {
            return Err(format!(
                "this process's time namespace changed while it ran (CLOCK_BOOTTIME offset {} s, then {} s: \
                 restored into another namespace?): its SQLite lease clock is no longer known; restart it",
                first as f64 / 1e9,
                now as f64 / 1e9
            ));
        }
        Ok(now)
    }

    /// The offset now: `None` where the kernel has no time namespaces.
    fn read() -> Result<Option<i128>, String> {
        match std::fs::read_to_string(OFFSETS) {
            Ok(text) => parse(&text).map(Some).map_err(|why| format!("{OFFSETS}: {why}")),
            // No file, in a mounted /proc whose namespaces have no `time`: a kernel without
            // time namespaces, whose clocks are the host's.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && std::path::Path::new("/proc/self/ns").is_dir()
                    && !std::path::Path::new("/proc/self/ns/time").exists() =>
            {
                Ok(None)
            }
            Err(e) => Err(format!(
                "cannot read {OFFSETS} ({e}): without it a process in another time namespace would judge \
                 SQLite leases on an offset clock (mount /proc)"
            )),
        }
    }

    /// The boottime offset of `/proc/self/timens_offsets` ("boottime <s> <ns>"), in ns.
    pub(super) fn parse(text: &str) -> Result<i128, String> {
        let line = text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.first() == Some(&"boottime") || f.first() == Some(&"7"))
            .ok_or_else(|| format!("no boottime offset in {text:?}"))?;
        let num = |i: usize| line.get(i).and_then(|v| v.parse::<i64>().ok());
        match (num(1), num(2), line.len()) {
            (Some(s), Some(ns), 3) if (0..1_000_000_000).contains(&ns) => {
                Ok(i128::from(s) * 1_000_000_000 + i128::from(ns))
            }
            _ => Err(format!("unreadable boottime offset {line:?}")),
        }
    }
}

/// This boot's id (Linux), or a constant where the system has none to read: the base
/// then never moves, as with the wall clock it stands for.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map_or_else(|_| "wall-clock".into(), |s| s.trim().into())
}

fn wall_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::timens::parse;

    #[test]
    fn timens_offsets_are_parsed_or_refused() {
        assert_eq!(parse("monotonic           0         0\nboottime           60         0\n"), Ok(60_000_000_000));
        assert_eq!(parse("monotonic 0 0\nboottime -5 250000000\n"), Ok(-4_750_000_000));
        // The clock's number (CLOCK_BOOTTIME = 7), as older kernels print it.
        assert_eq!(parse("1 0 0\n7 2 0\n"), Ok(2_000_000_000));
        for bad in ["", "monotonic 0 0", "boottime x 0", "boottime 1 2000000000", "boottime 1"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
