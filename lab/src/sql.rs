//! The SQL rows' databases: the URL of each row (the database's URL with the row's
//! `?scheme=`), a SQLite file of the lab's own, and the cleaning of what a run leaves in
//! a database it does not own (rows of crashed holders, optimistic version rows, the
//! counter table's rows: never deleted by the schemes themselves).

use baton::StoreUrl;
use baton::{Error, ErrorKind, Result};

use crate::scheme::{Database, Scheme};

/// Every table the SQL schemes write under their default names (sql-schemes.md, and
/// `baton_state` of baton's own design).
const TABLES: [&str; 5] = ["baton_state", "baton_lock", "baton_row_lock", "baton_version_lock", "baton_lock_fence"];

/// The databases of one run: the URLs given, and the lab's own SQLite file.
pub(crate) struct Databases {
    postgres: Option<String>,
    mysql: Option<String>,
    sqlite: Option<tempfile::TempDir>,
    /// The databases rows ran on, in order of first use.
    used: Vec<Database>,
}

impl Databases {
    /// Checks the URLs given (`InvalidArgument`: not that database, or a `?scheme=` of
    /// its own, which the rows set).
    pub(crate) fn new(postgres: Option<&String>, mysql: Option<&String>) -> Result<Databases> {
        let check = |url: Option<&String>, schemes: &[&str], what: &str| -> Result<Option<String>> {
            let Some(url) = url else { return Ok(None) };
            let parsed = StoreUrl::parse(url)?;
            if !schemes.contains(&parsed.scheme()) {
                return Err(Error::new(ErrorKind::InvalidArgument, format!("lab: {parsed} is not a {what} URL")));
            }
            if parsed.option("scheme").is_some() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("lab: {parsed}: leave out ?scheme= (each SQL row sets its own)"),
                ));
            }
            Ok(Some(url.clone()))
        };
        Ok(Databases {
            postgres: check(postgres, &["postgres", "postgresql"], "PostgreSQL (postgres://)")?,
            mysql: check(mysql, &["mysql"], "MySQL/MariaDB (mysql://)")?,
            sqlite: None,
            used: Vec::new(),
        })
    }

    /// The base URL of `db` (the SQLite file made on first use), or why the rows of
    /// `db` cannot run.
    pub(crate) fn base(&mut self, db: Database) -> std::result::Result<String, &'static str> {
        match db {
            Database::Postgres => self.postgres.clone().ok_or("needs a PostgreSQL server (--postgres-url)"),
            Database::Mysql => self.mysql.clone().ok_or("needs a MySQL or MariaDB server (--mysql-url)"),
            Database::Sqlite => {
                if self.sqlite.is_none() {
                    self.sqlite = tempfile::Builder::new().prefix("baton-lab-sqlite-").tempdir().ok();
                }
                let dir = self.sqlite.as_ref().ok_or("cannot make a temporary directory for its SQLite file")?;
                Ok(format!("sqlite://{}", dir.path().join("lab.db").display()))
            }
        }
    }
}

impl Databases {
    /// Notes that a row ran on `db`.
    pub(crate) fn mark_used(&mut self, db: Database) {
        if !self.used.contains(&db) {
            self.used.push(db);
        }
    }

    /// The databases rows ran on, as the matrix names them (passwords hidden).
    pub(crate) fn used(&self) -> Vec<String> {
        let shown = |url: &Option<String>| {
            url.as_deref().and_then(|u| StoreUrl::parse(u).ok()).map(|u| u.to_string()).unwrap_or_default()
        };
        self.used
            .iter()
            .map(|db| match db {
                Database::Sqlite => "sqlite (a file of the lab's own)".to_owned(),
                Database::Postgres => shown(&self.postgres),
                Database::Mysql => shown(&self.mysql),
            })
            .collect()
    }
}

/// `base` with the `?scheme=` of `scheme` (baton's own design: `base` itself).
pub(crate) fn row_url(base: &str, scheme: Scheme) -> String {
    match scheme.sql() {
        Some((_, Some(option))) => {
            let sep = if base.contains('?') { '&' } else { '?' };
            format!("{base}{sep}scheme={option}")
        }
        _ => base.to_owned(),
    }
}

/// Deletes the rows of lock names starting with `run_id` from every scheme's default tables
/// of the server `base` (PostgreSQL or MySQL; the lab's own SQLite file goes with its
/// directory). Best effort: a table that does not exist is skipped, a failure ignored.
pub(crate) async fn clean(db: Database, base: &str, run_id: &str) {
    use sqlx::Executor;
    // sqlx reads its own URL options only: baton's (`lease`, `pool`, …) are left out.
    let url = base.split('?').next().unwrap_or(base);
    // The run id is the lab's own (`baton-lab:` and hex digits): nothing to escape. The
    // lab's names start with it: a prefix is an index range, so the delete reads (and
    // locks) only the run's own rows, never other clients' locks on the shared server.
    let like = format!("'{run_id}%'");
    match db {
        Database::Postgres => {
            let Ok(mut c) = <sqlx::PgConnection as sqlx::Connection>::connect(url).await else { return };
            for t in TABLES {
                let _ = c.execute(format!("DELETE FROM {t} WHERE name LIKE {like}").as_str()).await;
            }
            let _ = sqlx::Connection::close(c).await;
        }
        Database::Mysql => {
            let Ok(mut c) = <sqlx::MySqlConnection as sqlx::Connection>::connect(url).await else { return };
            // No gap locks: a row another client holds `FOR UPDATE` next to the range is
            // neither waited for nor blocked.
            let _ = c.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED").await;
            for t in TABLES {
                let _ = c.execute(format!("DELETE FROM {t} WHERE name LIKE {like}").as_str()).await;
            }
            let _ = sqlx::Connection::close(c).await;
        }
        Database::Sqlite => {}
    }
}
