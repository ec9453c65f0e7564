//! `?scheme=` and its options on `postgres://`, `mysql://` and `sqlite://`: which of the
//! classic SQL lock schemes a store speaks, and the table and column names it uses. Names
//! are checked as plain identifiers (letters, digits, `_`, at most one `schema.` part)
//! and quoted anyway, so an option can never smuggle SQL into a statement.

use crate::error::{Error, Result};
use crate::store::sql::config::SqlConfig;
use crate::url::{COMMON_OPTIONS, StoreUrl};

/// The lock schemes besides baton's own state rows (the default, `scheme=state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// A row per held name in a table whose name column is unique.
    Table,
    /// A transaction holding `SELECT … FOR UPDATE` on the name's row.
    ForUpdate,
    /// A compare-and-set on a version column.
    Optimistic,
    /// PostgreSQL advisory locks, MySQL/MariaDB `GET_LOCK`.
    Advisory,
}

impl Scheme {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scheme::Table => "table",
            Scheme::ForUpdate => "for-update",
            Scheme::Optimistic => "optimistic",
            Scheme::Advisory => "advisory",
        }
    }

    /// The table a scheme makes when `?table=` is not given.
    fn default_table(self) -> &'static str {
        match self {
            Scheme::Table => "baton_lock",
            Scheme::ForUpdate => "baton_row_lock",
            Scheme::Optimistic => "baton_version_lock",
            Scheme::Advisory => "baton_lock_fence",
        }
    }

    /// The URL options this scheme reads, besides `scheme` and the common ones.
    fn options(self) -> Vec<&'static str> {
        match self {
            Scheme::Table => [ROW_COLUMNS, &["fence_table", "create", "exclusive"]].concat(),
            Scheme::Optimistic => [ROW_COLUMNS, &["version_column", "create", "exclusive"]].concat(),
            Scheme::ForUpdate => vec!["table", "name_column", "fence_table", "create", "pool", "exclusive"],
            Scheme::Advisory => vec!["fence_table", "create", "pool", "exclusive"],
        }
    }
}

/// The options naming the table and the columns of a row scheme (`table`, `optimistic`).
const ROW_COLUMNS: &[&str] =
    &["table", "name_column", "owner_column", "expires_column", "count_column", "token_column"];

/// The tables and columns of a scheme, each a checked identifier.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub(crate) table: String,
    pub(crate) name: String,
    pub(crate) owner: String,
    pub(crate) expires: String,
    pub(crate) count: String,
    pub(crate) token: String,
    pub(crate) version: String,
    /// The per-name counter of tokens, which outlives every lock row.
    pub(crate) fence_table: String,
}

/// What `?scheme=` and its options ask for.
#[derive(Debug, Clone)]
pub(crate) struct SchemeConfig {
    pub(crate) names: Names,
    /// `?create=false`: never create a table (they must exist).
    pub(crate) create: bool,
    /// Every grant also claims the name in `baton_state`, so that the designs exclude each
    /// other (`claim.rs`); `?exclusive=false` turns it off, for a database where nothing
    /// else locks these names and one statement less per grant is worth having.
    pub(crate) exclusive: bool,
    /// Connections that held locks may pin at once (`for-update`, `advisory`; `?pool=`).
    pub(crate) pool: u32,
    /// The database, parsed once here (`super::super::config`).
    pub(crate) db: SqlConfig,
}

/// The lock scheme `url` names: `None` for baton's own design (no `scheme`, or `state`).
pub(crate) fn requested(url: &StoreUrl) -> Result<Option<Scheme>> {
    match url.option("scheme") {
        None | Some("state") => Ok(None),
        Some(v) => {
            v.parse().map(Some).map_err(|why| Error::invalid_argument(format!("option `scheme` of {url}: {why}")))
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;

    /// A lock scheme by its `?scheme=` name (`state`, baton's own design, is no `Scheme`).
    fn from_str(s: &str) -> std::result::Result<Scheme, String> {
        [Scheme::Table, Scheme::ForUpdate, Scheme::Optimistic, Scheme::Advisory]
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "`{s}` is not a SQL lock scheme (state: baton's own rows, the default; \
                     table, for-update, optimistic, advisory)"
                )
            })
    }
}

impl SchemeConfig {
    pub(crate) fn from_url(url: &StoreUrl, scheme: Scheme) -> Result<SchemeConfig> {
        let sqlite = url.scheme() == "sqlite";
        if sqlite && matches!(scheme, Scheme::ForUpdate | Scheme::Advisory) {
            return Err(Error::unsupported(format!(
                "`?scheme={}` needs a database server (PostgreSQL, MySQL/MariaDB): SQLite has no {}; \
                 on SQLite use scheme=table or scheme=optimistic",
                scheme.as_str(),
                if scheme == Scheme::ForUpdate { "row locks" } else { "advisory locks" }
            )));
        }
        let mut known = COMMON_OPTIONS.to_vec();
        known.push("scheme");
        known.extend(scheme.options());
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        known.extend(super::super::tls::options(url.scheme()));
        if sqlite {
            known.push("busy_timeout");
        }
        url.check_options(&known)?;
        let ident = |opt: &str, default: &str| -> Result<String> {
            let v = url.option(opt).unwrap_or(default);
            identifier(v).map_err(|why| Error::invalid_argument(format!("option `{opt}` of {url}: {why}")))?;
            Ok(v.to_owned())
        };
        let names = Names {
            table: ident("table", scheme.default_table())?,
            name: ident("name_column", "name")?,
            owner: ident("owner_column", "owner")?,
            expires: ident("expires_column", "expires_at")?,
            count: ident("count_column", "hold_count")?,
            token: ident("token_column", "token")?,
            version: ident("version_column", "version")?,
            fence_table: ident("fence_table", "baton_lock_fence")?,
        };
        let create = match url.option("create") {
            None | Some("true") => true,
            Some("false") => false,
            Some(v) => {
                return Err(Error::invalid_argument(format!("option `create` of {url}: `{v}` is not true or false")));
            }
        };
        let exclusive = match url.option("exclusive") {
            None | Some("true") => true,
            Some("false") => false,
            Some(v) => {
                return Err(Error::invalid_argument(format!(
                    "option `exclusive` of {url}: `{v}` is not true or false"
                )));
            }
        };
        let pool = match url.option("pool") {
            None => 32,
            Some(v) => v.parse::<u32>().ok().filter(|n| (1..=10_000).contains(n)).ok_or_else(|| {
                Error::invalid_argument(format!("option `pool` of {url}: `{v}` is not a connection count in 1..=10000"))
            })?,
        };
        Ok(SchemeConfig { names, create, exclusive, pool, db: SqlConfig::unchecked(url)? })
    }
}

/// A table or column name: 1..=63 of `[A-Za-z0-9_]`, not starting with a digit, with at
/// most one `schema.` qualifier.
pub(crate) fn identifier(s: &str) -> std::result::Result<(), String> {
    let parts: Vec<&str> = s.split('.').collect();
    let ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 63
            && !p.starts_with(|c: char| c.is_ascii_digit())
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if parts.len() <= 2 && parts.iter().all(|p| ok(p)) {
        Ok(())
    } else {
        Err(format!(
            "`{s}` is not a plain identifier (letters, digits and `_`, at most 63, not starting with a digit, \
             optionally `schema.name`)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn parse(url: &str) -> Result<SchemeConfig> {
        let url = StoreUrl::parse(url)?;
        SchemeConfig::from_url(&url, requested(&url)?.expect("a scheme"))
    }

    #[test]
    fn identifiers_are_checked() {
        for good in ["method_lock", "app.method_lock", "_x9"] {
            assert!(identifier(good).is_ok(), "{good}");
        }
        for bad in ["", "a;drop table x", "a--", "\"x\"", "a.b.c", "9a", "a b", "ä"] {
            assert!(identifier(bad).is_err(), "{bad}");
        }
        let e = parse("postgres://h/db?scheme=table&table=x;drop").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }

    #[test]
    fn options_per_scheme() {
        let c = parse("mysql://h/db?scheme=table&table=method_lock&name_column=method_name&create=false").unwrap();
        assert_eq!((c.names.table.as_str(), c.names.name.as_str(), c.create), ("method_lock", "method_name", false));
        assert_eq!(parse("mysql://h/db?scheme=advisory&table=x").unwrap_err().kind(), ErrorKind::InvalidUrl);
        assert_eq!(parse("postgres://h/db?scheme=rows").unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(parse("postgres://h/db?scheme=for-update&pool=0").unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(parse("sqlite:///tmp/x.db?scheme=advisory").unwrap_err().kind(), ErrorKind::Unsupported);
        assert_eq!(parse("sqlite:///tmp/x.db?scheme=for-update").unwrap_err().kind(), ErrorKind::Unsupported);
        assert!(parse("sqlite:///tmp/x.db?scheme=optimistic&busy_timeout=1s").is_ok());
        assert!(parse("postgres://h/db?scheme=advisory&sslmode=require").is_ok());
        assert!(parse("mysql://h/db?scheme=for-update&ssl-mode=REQUIRED").is_ok());
        assert_eq!(parse("sqlite:///tmp/x.db?scheme=table&sslmode=require").unwrap_err().kind(), ErrorKind::InvalidUrl);
        // The cross-design claim is on unless turned off.
        assert!(parse("postgres://h/db?scheme=table").unwrap().exclusive);
        assert!(!parse("postgres://h/db?scheme=advisory&exclusive=false").unwrap().exclusive);
        assert_eq!(parse("mysql://h/db?scheme=table&exclusive=yes").unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
}
