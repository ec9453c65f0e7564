//! SQL store URLs, parsed once into a typed `SqlConfig`. Besides the options below, each
//! accepts the common ones (`lease`, `renew`, `prefix`), which the client reads.

#[cfg(feature = "sqlite")]
use std::time::Duration;

use crate::error::{Error, Result};
use crate::url::COMMON_OPTIONS;
use crate::url::StoreUrl;

/// What a SQL store URL names: the database kind, and where it is.
#[derive(Debug, Clone)]
pub(crate) enum SqlConfig {
    /// `sqlite:///path/file.db[?busy_timeout=]`.
    #[cfg(feature = "sqlite")]
    Sqlite(FileConfig),
    /// `postgres[ql]://user:password@host:port/db[?sslmode=&sslrootcert=&create=]`.
    #[cfg(feature = "postgres")]
    Postgres(ServerConfig),
    /// `mysql://user:password@host:port/db[?ssl-mode=&ssl-ca=&create=]`.
    #[cfg(feature = "mysql")]
    Mysql(ServerConfig),
}

/// An embedded database file.
#[cfg(feature = "sqlite")]
#[derive(Debug, Clone)]
pub(crate) struct FileConfig {
    /// As written: `sqlite:///abs/path.db` → `/abs/path.db`, `sqlite://rel.db` → `rel.db`.
    pub(crate) path: String,
    /// How long a step waits for another process's write lock (`?busy_timeout=`, 5 s).
    pub(crate) busy_timeout: Duration,
}

/// A database server. Its `Debug` never shows the password.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Clone)]
pub(crate) struct ServerConfig {
    /// The URL as messages show it (password redacted).
    pub(crate) shown: String,
    /// `host:port`, as written.
    pub(crate) hosts: String,
    /// The database, with its leading `/` (empty when absent).
    pub(crate) database: String,
    pub(crate) user: Option<String>,
    password: Option<String>,
    /// The TLS options, checked, as the driver reads them (`super::tls`).
    tls: Vec<(&'static str, String)>,
    /// `?create=false`: the store's tables must exist; it never makes nor alters them.
    pub(crate) create: bool,
}

impl SqlConfig {
    pub(crate) fn from_url(url: &StoreUrl) -> Result<SqlConfig> {
        match url.scheme() {
            #[cfg(feature = "sqlite")]
            "sqlite" => FileConfig::from_url(url).map(SqlConfig::Sqlite),
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => ServerConfig::from_url(url).map(SqlConfig::Postgres),
            #[cfg(feature = "mysql")]
            "mysql" => ServerConfig::from_url(url).map(SqlConfig::Mysql),
            s => Err(Error::invalid_url(format!("`{s}://` in {url} names no SQL store of this build"))),
        }
    }
    /// The file of a `sqlite://` URL (the scheme table sends no other here).
    #[cfg(feature = "sqlite")]
    pub(crate) fn file(self) -> Result<FileConfig> {
        match self {
            SqlConfig::Sqlite(c) => Ok(c),
            #[allow(unreachable_patterns)]
            _ => Err(Error::invalid_url("a SQLite store opens from a sqlite:// URL")),
        }
    }

    /// The server of a `postgres://` or `mysql://` URL.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub(crate) fn server(self) -> Result<ServerConfig> {
        match self {
            #[cfg(feature = "postgres")]
            SqlConfig::Postgres(c) => Ok(c),
            #[cfg(feature = "mysql")]
            SqlConfig::Mysql(c) => Ok(c),
            #[allow(unreachable_patterns)]
            _ => Err(Error::invalid_url("a database server store opens from a postgres:// or mysql:// URL")),
        }
    }
}

#[cfg(feature = "sqlite")]
impl FileConfig {
    fn from_url(url: &StoreUrl) -> Result<FileConfig> {
        // `scheme` is `state` or absent here: the other schemes open elsewhere.
        url.check_options(&[COMMON_OPTIONS, &["busy_timeout", "scheme"]].concat())?;
        let path = format!("{}{}", url.hosts(), url.path());
        if path.is_empty() || path.ends_with('/') {
            return Err(Error::invalid_url(format!(
                "{url} names no database file; use sqlite:///absolute/path/file.db"
            )));
        }
        let busy_timeout = match url.option("busy_timeout") {
            Some(v) => crate::duration::parse(v)?,
            None => Duration::from_secs(5),
        };
        Ok(FileConfig { path, busy_timeout })
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl ServerConfig {
    fn from_url(url: &StoreUrl) -> Result<ServerConfig> {
        url.check_options(&[COMMON_OPTIONS, &["scheme", "create"], &super::tls::options(url.scheme())].concat())?;
        let create = match url.option("create") {
            None | Some("true") => true,
            Some("false") => false,
            Some(v) => {
                return Err(Error::invalid_argument(format!("option `create` of {url}: `{v}` is not true or false")));
            }
        };
        Ok(ServerConfig { create, ..ServerConfig::unchecked(url)? })
    }

    /// The server of `url`, whatever its other options (the lock schemes check their
    /// own); its TLS options are checked here.
    pub(crate) fn unchecked(url: &StoreUrl) -> Result<ServerConfig> {
        Ok(ServerConfig {
            shown: url.to_string(),
            hosts: url.hosts().to_owned(),
            database: url.path().to_owned(),
            user: url.user().map(str::to_owned),
            password: url.password().map(str::to_owned),
            tls: super::tls::driver_options(url)?,
            create: true,
        })
    }

    /// The URL handed to the driver: `scheme://user:password@hosts/db`, with the TLS
    /// options only of the query (baton's own are not the driver's). It carries the
    /// password, so it never goes into a message.
    pub(crate) fn driver_url(&self, scheme: &str) -> String {
        let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20");
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(p)) => format!("{}:{}@", enc(u), enc(p)),
            (Some(u), None) => format!("{}@", enc(u)),
            _ => String::new(),
        };
        let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&self.tls).finish();
        let query = if query.is_empty() { query } else { format!("?{query}") };
        format!("{scheme}://{auth}{}{}{query}", self.hosts, self.database)
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig").field("url", &self.shown).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn parse(url: &str) -> Result<SqlConfig> {
        SqlConfig::from_url(&StoreUrl::parse(url)?)
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn sqlite_path_and_busy_timeout() {
        let SqlConfig::Sqlite(c) = parse("sqlite:///tmp/x.db?busy_timeout=2s&prefix=p").unwrap() else { panic!() };
        assert_eq!((c.path.as_str(), c.busy_timeout), ("/tmp/x.db", Duration::from_secs(2)));
        assert_eq!(parse("sqlite:///tmp/").unwrap_err().kind(), ErrorKind::InvalidUrl);
        assert_eq!(parse("sqlite:///tmp/x.db?timeout=1s").unwrap_err().kind(), ErrorKind::InvalidUrl);
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn servers_keep_the_password_for_the_driver_only() {
        let SqlConfig::Postgres(c) = parse("postgresql://u:p%20w@h:5432/db?lease=5s").unwrap() else { panic!() };
        assert_eq!(c.driver_url("postgres"), "postgres://u:p%20w@h:5432/db");
        assert!(!format!("{c:?}").contains("p w") && !c.shown.contains("p%20w"), "{c:?}");
        assert_eq!(parse("postgres://h/db?busy_timeout=1s").unwrap_err().kind(), ErrorKind::InvalidUrl);
        let SqlConfig::Postgres(c) = parse("postgres://h/db?create=false").unwrap() else { panic!() };
        assert!(!c.create);
        assert_eq!(parse("postgres://h/db?create=no").unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    #[cfg(all(feature = "postgres", feature = "mysql"))]
    #[test]
    fn tls_options_go_to_the_driver_under_each_database_s_names() {
        let SqlConfig::Postgres(c) = parse("postgres://u:p@h/db?sslmode=require&lease=5s").unwrap() else { panic!() };
        assert_eq!(c.driver_url("postgres"), "postgres://u:p@h/db?sslmode=require");
        let SqlConfig::Mysql(c) = parse("mysql://h/db?ssl-mode=required").unwrap() else { panic!() };
        assert_eq!(c.driver_url("mysql"), "mysql://h/db?ssl-mode=REQUIRED");
        // Each database's own spelling only: the other's is a typo here.
        assert_eq!(parse("mysql://h/db?sslmode=require").unwrap_err().kind(), ErrorKind::InvalidUrl);
        assert_eq!(parse("postgres://h/db?ssl-mode=REQUIRED").unwrap_err().kind(), ErrorKind::InvalidUrl);
        assert_eq!(parse("postgres://h/db?sslmode=on").unwrap_err().kind(), ErrorKind::InvalidUrl);
    }
}
