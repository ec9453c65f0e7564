//! One face over the three drivers for the schemes' statements: a pool, a pinned
//! connection, a transaction, each run with positional arguments (numbers and text, always
//! bound, never spliced), and the few places where the SQL dialects differ.

use sqlx::pool::PoolConnection;

use super::super::driver_error;
use crate::error::Error;

/// Which SQL a statement is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Postgres,
    Mysql,
    Sqlite,
}

impl Dialect {
    /// A checked identifier (`a` or `schema.a`), quoted.
    pub(crate) fn q(self, ident: &str) -> String {
        let (open, close) = if self == Dialect::Mysql { ('`', '`') } else { ('"', '"') };
        ident.split('.').map(|p| format!("{open}{p}{close}")).collect::<Vec<_>>().join(".")
    }

    /// The `i`-th (1-based) parameter placeholder.
    pub(crate) fn p(self, i: usize) -> String {
        if self == Dialect::Postgres { format!("${i}") } else { "?".to_owned() }
    }

    /// The database's clock, in milliseconds (PostgreSQL, MySQL: since the Unix epoch;
    /// SQLite: the file's lease clock on this machine's `CLOCK_BOOTTIME`, which a wall-clock
    /// step does not move, registered on each connection: `boot_clock::register`).
    pub(crate) fn now_ms(self) -> &'static str {
        match self {
            Dialect::Postgres => "(extract(epoch from clock_timestamp()) * 1000)::bigint",
            Dialect::Mysql => "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
            Dialect::Sqlite => "baton_now_ms()",
        }
    }

    /// The database's clock in microseconds (as [`Dialect::now_ms`]): the least token a
    /// fresh grant takes, as baton's own design does, so that tokens of one name rise
    /// across the designs (`claim`).
    pub(crate) fn now_us(self) -> &'static str {
        match self {
            Dialect::Postgres => "(extract(epoch from clock_timestamp()) * 1000000)::bigint",
            Dialect::Mysql => "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)",
            Dialect::Sqlite => "(baton_now_ms() * 1000)",
        }
    }

    /// The larger of two numbers, as SQL names it.
    pub(crate) fn greatest(self) -> &'static str {
        if self == Dialect::Sqlite { "MAX" } else { "GREATEST" }
    }

    /// The column type of names (bytes compared as bytes on MySQL: no collation makes
    /// two names one).
    pub(crate) fn name_type(self) -> &'static str {
        match self {
            Dialect::Mysql => "VARCHAR(510) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
            _ => "TEXT",
        }
    }

    /// A text column as selected: MySQL reports columns of a binary collation as
    /// `VARBINARY`, which the driver will not read as text, so they are cast back.
    pub(crate) fn text(self, quoted_col: &str) -> String {
        if self == Dialect::Mysql {
            format!("CAST({quoted_col} AS CHAR CHARACTER SET utf8mb4)")
        } else {
            quoted_col.to_owned()
        }
    }

    /// What a lock table baton makes starts and ends with: its `id` column, the type of
    /// its owner column, and what follows the column list.
    pub(crate) fn table_parts(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Dialect::Postgres => ("id BIGSERIAL PRIMARY KEY", "TEXT", ""),
            Dialect::Mysql => (
                "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY",
                "VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
                " ENGINE = InnoDB",
            ),
            Dialect::Sqlite => ("id INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT", ""),
        }
    }

    /// `INSERT` that does nothing when the key exists.
    pub(crate) fn insert_ignore(self) -> &'static str {
        if self == Dialect::Mysql { "INSERT IGNORE INTO" } else { "INSERT INTO" }
    }

    /// What follows the `VALUES (…)` of [`Dialect::insert_ignore`].
    pub(crate) fn on_conflict_nothing(self) -> &'static str {
        if self == Dialect::Mysql { "" } else { " ON CONFLICT DO NOTHING" }
    }
}

/// One bound argument.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    I(i64),
    S(&'a str),
}

/// Rows every enabled driver can decode into `Self` (a tuple of `i64`, `String`, `Option`s).
pub(crate) trait Row: PgRow + MyRow + LiteRow + Send + Unpin + 'static {}
impl<T: PgRow + MyRow + LiteRow + Send + Unpin + 'static> Row for T {}

macro_rules! row_trait {
    ($trait:ident, $feature:literal, $row:ty) => {
        #[cfg(feature = $feature)]
        pub(crate) trait $trait: for<'r> sqlx::FromRow<'r, $row> {}
        #[cfg(feature = $feature)]
        impl<T: for<'r> sqlx::FromRow<'r, $row>> $trait for T {}
        #[cfg(not(feature = $feature))]
        pub(crate) trait $trait {}
        #[cfg(not(feature = $feature))]
        impl<T> $trait for T {}
    };
}
row_trait!(PgRow, "postgres", sqlx::postgres::PgRow);
row_trait!(MyRow, "mysql", sqlx::mysql::MySqlRow);
row_trait!(LiteRow, "sqlite", sqlx::sqlite::SqliteRow);

/// What a statement did: rows changed, and MySQL's `LAST_INSERT_ID()` of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Done {
    pub(crate) rows: u64,
    pub(crate) last_id: u64,
}

/// A connection pool of one of the drivers.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    #[cfg(feature = "postgres")]
    Pg(sqlx::PgPool),
    #[cfg(feature = "mysql")]
    My(sqlx::MySqlPool),
    #[cfg(feature = "sqlite")]
    Lite(sqlx::SqlitePool),
}

/// A connection taken out of a [`Pool`] (pinned to a hold, or for one step).
#[derive(Debug)]
pub(crate) enum Conn {
    #[cfg(feature = "postgres")]
    Pg(PoolConnection<sqlx::Postgres>),
    #[cfg(feature = "mysql")]
    My(PoolConnection<sqlx::MySql>),
    #[cfg(feature = "sqlite")]
    Lite(PoolConnection<sqlx::Sqlite>),
}

/// A transaction; dropped unfinished, it rolls back.
#[derive(Debug)]
pub(crate) enum Tx {
    #[cfg(feature = "postgres")]
    Pg(sqlx::Transaction<'static, sqlx::Postgres>),
    #[cfg(feature = "mysql")]
    My(sqlx::Transaction<'static, sqlx::MySql>),
    #[cfg(feature = "sqlite")]
    Lite(sqlx::Transaction<'static, sqlx::Sqlite>),
}

/// Runs `$body` with `$c` bound to the driver's connection inside `$e`, whichever it is.
macro_rules! each {
    ($e:expr, $c:ident => $body:expr) => {
        match $e {
            #[cfg(feature = "postgres")]
            Ex::Pg($c) => $body,
            #[cfg(feature = "mysql")]
            Ex::My($c) => $body,
            #[cfg(feature = "sqlite")]
            Ex::Lite($c) => $body,
        }
    };
}

/// Binds `$args` to a query built by `$q`.
macro_rules! bound {
    ($q:expr, $args:expr) => {{
        let mut q = $q;
        for a in $args {
            q = match a {
                Arg::I(v) => q.bind(*v),
                Arg::S(s) => q.bind(*s),
            };
        }
        q
    }};
}

/// A borrowed connection of any driver, to run statements on.
pub(crate) enum Ex<'c> {
    #[cfg(feature = "postgres")]
    Pg(&'c mut sqlx::PgConnection),
    #[cfg(feature = "mysql")]
    My(&'c mut sqlx::MySqlConnection),
    #[cfg(feature = "sqlite")]
    Lite(&'c mut sqlx::SqliteConnection),
}

impl Ex<'_> {
    pub(crate) async fn exec(self, sql: &str, args: &[Arg<'_>]) -> std::result::Result<Done, sqlx::Error> {
        each!(self, c => {
            #[allow(unused_variables)]
            let r = bound!(sqlx::query(sql), args).execute(&mut *c).await?;
            Ok(Done { rows: r.rows_affected(), last_id: last_id(&r) })
        })
    }

    pub(crate) async fn opt<T: Row>(self, sql: &str, args: &[Arg<'_>]) -> std::result::Result<Option<T>, sqlx::Error> {
        each!(self, c => bound!(sqlx::query_as::<_, T>(sql), args).fetch_optional(&mut *c).await)
    }

    pub(crate) async fn one<T: Row>(self, sql: &str, args: &[Arg<'_>]) -> std::result::Result<T, sqlx::Error> {
        each!(self, c => bound!(sqlx::query_as::<_, T>(sql), args).fetch_one(&mut *c).await)
    }
}

/// MySQL's `LAST_INSERT_ID()` of a statement (0 elsewhere).
trait LastId {
    fn last(&self) -> u64;
}
#[cfg(feature = "postgres")]
impl LastId for sqlx::postgres::PgQueryResult {
    fn last(&self) -> u64 {
        0
    }
}
#[cfg(feature = "mysql")]
impl LastId for sqlx::mysql::MySqlQueryResult {
    fn last(&self) -> u64 {
        self.last_insert_id()
    }
}
#[cfg(feature = "sqlite")]
impl LastId for sqlx::sqlite::SqliteQueryResult {
    fn last(&self) -> u64 {
        0
    }
}
fn last_id(r: &impl LastId) -> u64 {
    r.last()
}

impl Conn {
    pub(crate) fn ex(&mut self) -> Ex<'_> {
        match self {
            #[cfg(feature = "postgres")]
            Conn::Pg(c) => Ex::Pg(c),
            #[cfg(feature = "mysql")]
            Conn::My(c) => Ex::My(c),
            #[cfg(feature = "sqlite")]
            Conn::Lite(c) => Ex::Lite(c),
        }
    }

    /// Begins a transaction on this connection, which it keeps until the end.
    pub(crate) async fn begin(self) -> std::result::Result<Tx, sqlx::Error> {
        Ok(match self {
            #[cfg(feature = "postgres")]
            Conn::Pg(c) => Tx::Pg(sqlx::Transaction::begin(c, None).await?),
            #[cfg(feature = "mysql")]
            Conn::My(c) => Tx::My(sqlx::Transaction::begin(c, None).await?),
            #[cfg(feature = "sqlite")]
            Conn::Lite(c) => Tx::Lite(sqlx::Transaction::begin(c, None).await?),
        })
    }

    /// Drops the connection at once, without a word to the server: for one whose reply
    /// never came, which the pool must not hand out again.
    fn abandon(self) {
        match self {
            #[cfg(feature = "postgres")]
            Conn::Pg(c) => drop(c.detach()),
            #[cfg(feature = "mysql")]
            Conn::My(c) => drop(c.detach()),
            #[cfg(feature = "sqlite")]
            Conn::Lite(c) => drop(c.detach()),
        }
    }

    /// Closes the connection instead of giving it back (the server then ends its
    /// session, and every lock the session held).
    pub(crate) async fn close(self) {
        match self {
            #[cfg(feature = "postgres")]
            Conn::Pg(c) => drop(c.close().await),
            #[cfg(feature = "mysql")]
            Conn::My(c) => drop(c.close().await),
            #[cfg(feature = "sqlite")]
            Conn::Lite(c) => drop(c.close().await),
        }
    }
}

impl Tx {
    pub(crate) fn ex(&mut self) -> Ex<'_> {
        match self {
            #[cfg(feature = "postgres")]
            Tx::Pg(t) => Ex::Pg(t),
            #[cfg(feature = "mysql")]
            Tx::My(t) => Ex::My(t),
            #[cfg(feature = "sqlite")]
            Tx::Lite(t) => Ex::Lite(t),
        }
    }

    pub(crate) async fn commit(self) -> std::result::Result<(), sqlx::Error> {
        match self {
            #[cfg(feature = "postgres")]
            Tx::Pg(t) => t.commit().await,
            #[cfg(feature = "mysql")]
            Tx::My(t) => t.commit().await,
            #[cfg(feature = "sqlite")]
            Tx::Lite(t) => t.commit().await,
        }
    }

    pub(crate) async fn rollback(self) -> std::result::Result<(), sqlx::Error> {
        match self {
            #[cfg(feature = "postgres")]
            Tx::Pg(t) => t.rollback().await,
            #[cfg(feature = "mysql")]
            Tx::My(t) => t.rollback().await,
            #[cfg(feature = "sqlite")]
            Tx::Lite(t) => t.rollback().await,
        }
    }
}

impl Pool {
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            #[cfg(feature = "postgres")]
            Pool::Pg(_) => Dialect::Postgres,
            #[cfg(feature = "mysql")]
            Pool::My(_) => Dialect::Mysql,
            #[cfg(feature = "sqlite")]
            Pool::Lite(_) => Dialect::Sqlite,
        }
    }

    /// A connection, waiting for one as the pool's options say.
    pub(crate) async fn conn(&self) -> std::result::Result<Conn, sqlx::Error> {
        Ok(match self {
            #[cfg(feature = "postgres")]
            Pool::Pg(p) => Conn::Pg(p.acquire().await?),
            #[cfg(feature = "mysql")]
            Pool::My(p) => Conn::My(p.acquire().await?),
            #[cfg(feature = "sqlite")]
            Pool::Lite(p) => Conn::Lite(p.acquire().await?),
        })
    }

    /// A connection without waiting for one to come back: `None` when every connection
    /// the pool may open is taken.
    pub(crate) async fn conn_now(&self) -> std::result::Result<Option<Conn>, sqlx::Error> {
        macro_rules! now {
            ($p:expr, $v:ident) => {{
                if let Some(c) = $p.try_acquire() {
                    return Ok(Some(Conn::$v(c)));
                }
                if $p.size() >= $p.options().get_max_connections() && $p.num_idle() == 0 {
                    return Ok(None);
                }
                Ok(Some(Conn::$v($p.acquire().await?)))
            }};
        }
        match self {
            #[cfg(feature = "postgres")]
            Pool::Pg(p) => now!(p, Pg),
            #[cfg(feature = "mysql")]
            Pool::My(p) => now!(p, My),
            #[cfg(feature = "sqlite")]
            Pool::Lite(p) => now!(p, Lite),
        }
    }

    /// A transaction (SQLite: `BEGIN IMMEDIATE`, which takes the write lock up front).
    pub(crate) async fn begin(&self) -> std::result::Result<Tx, sqlx::Error> {
        Ok(match self {
            #[cfg(feature = "postgres")]
            Pool::Pg(p) => Tx::Pg(p.begin().await?),
            #[cfg(feature = "mysql")]
            Pool::My(p) => Tx::My(p.begin().await?),
            #[cfg(feature = "sqlite")]
            Pool::Lite(p) => Tx::Lite(p.begin_with("BEGIN IMMEDIATE").await?),
        })
    }

    // One statement on its own (autocommit): a deadlock victim was rolled back whole, so
    // it is run again (InnoDB picks victims among single statements too, where a unique
    // secondary index sees an insert and a delete at once).
    pub(crate) async fn exec(&self, sql: &str, args: &[Arg<'_>]) -> std::result::Result<Done, sqlx::Error> {
        retry(|| async { bounded!(self, |c| c.ex().exec(sql, args)) }).await
    }

    pub(crate) async fn opt<T: Row>(&self, sql: &str, args: &[Arg<'_>]) -> std::result::Result<Option<T>, sqlx::Error> {
        retry(|| async { bounded!(self, |c| c.ex().opt(sql, args)) }).await
    }

    pub(crate) async fn one<T: Row>(&self, sql: &str, args: &[Arg<'_>]) -> std::result::Result<T, sqlx::Error> {
        retry(|| async { bounded!(self, |c| c.ex().one(sql, args)) }).await
    }

    pub(crate) async fn close(&self) {
        match self {
            #[cfg(feature = "postgres")]
            Pool::Pg(p) => p.close().await,
            #[cfg(feature = "mysql")]
            Pool::My(p) => p.close().await,
            #[cfg(feature = "sqlite")]
            Pool::Lite(p) => p.close().await,
        }
    }
}

/// How long a pooled step waits for its statement's reply.
/// A step of these schemes is one short statement (none waits on another's lock for
/// long), so a reply this late means a connection cut off without a close (a lost route):
/// the caller gets a `Connection` error, never a call that hangs past its timeout.
const STEP_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

fn stalled() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no reply within {} s: the connection to the database is cut off", STEP_BOUND.as_secs()),
    ))
}

/// `$run` on a pooled connection, its reply within [`STEP_BOUND`]; a connection whose
/// reply is late is abandoned (it may still carry that reply).
macro_rules! bounded {
    ($pool:expr, |$c:ident| $run:expr) => {{
        // Waiting for a pooled connection is bounded by the pool (`acquire_timeout`), and
        // may be long for good reasons (a batch of renewals on a small pool).
        let mut $c = $pool.conn().await?;
        let r = tokio::time::timeout(STEP_BOUND, $run).await;
        match r {
            Ok(r) => r,
            Err(_) => {
                $c.abandon();
                Err(stalled())
            }
        }
    }};
}
use bounded;

/// Runs `f` again when it was chosen as a deadlock victim (a few times, briefly apart).
async fn retry<T, F, Fut>(mut f: F) -> std::result::Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, sqlx::Error>>,
{
    let mut tries = 0u64;
    loop {
        match f().await {
            Err(sqlx::Error::Database(d)) if tries < 10 && matches!(d.code().as_deref(), Some("40001" | "40P01")) => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(rand::random_range(1..=5 * tries))).await;
            }
            r => return r,
        }
    }
}

/// A driver error as baton's, naming the store (never its password).
pub(crate) fn err(store: &str) -> impl Fn(sqlx::Error) -> Error + '_ {
    move |e| driver_error(store, e)
}

/// Whether a failure means the connection is gone (not a refusal by the server).
pub(crate) fn is_io(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed)
}
