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
    host: String,
    /// Absent: the database's own default port.
    port: Option<u16>,
    /// The database (percent-decoded, without the path's `/`; empty when absent).
    database: String,
    user: Option<String>,
    password: Option<String>,
    /// The TLS options, checked, as the driver reads them (`super::tls`).
    tls: Vec<(&'static str, String)>,
    /// `?create=false`: the store's tables must exist; it never makes nor alters them.
    pub(crate) create: bool,
}

impl SqlConfig {
    /// The database of a store URL of baton's own design, its options checked.
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

    /// The database `url` names, whatever its other options: a lock scheme's URL, whose
    /// options the scheme checks (`scheme::config`).
    pub(crate) fn unchecked(url: &StoreUrl) -> Result<SqlConfig> {
        match url.scheme() {
            #[cfg(feature = "sqlite")]
            "sqlite" => FileConfig::unchecked(url).map(SqlConfig::Sqlite),
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => ServerConfig::unchecked(url).map(SqlConfig::Postgres),
            #[cfg(feature = "mysql")]
            "mysql" => ServerConfig::unchecked(url).map(SqlConfig::Mysql),
            s => Err(Error::invalid_url(format!("`{s}://` names no SQL database of this build"))),
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
        FileConfig::unchecked(url)
    }

    fn unchecked(url: &StoreUrl) -> Result<FileConfig> {
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
    fn unchecked(url: &StoreUrl) -> Result<ServerConfig> {
        let hosts = url.hosts();
        // `host[:port]`, or `[v6 address][:port]` (the brackets kept, as the driver takes it).
        let (host, port) = match hosts
            .rfind(']')
            .map_or(hosts.rsplit_once(':'), |end| hosts[end + 1..].strip_prefix(':').map(|p| (&hosts[..=end], p)))
        {
            Some((host, port)) => {
                let port = port
                    .parse::<u16>()
                    .map_err(|_| Error::invalid_url(format!("{url}: `{port}` is not a port number")))?;
                (host, Some(port))
            }
            None => (hosts, None),
        };
        Ok(ServerConfig {
            shown: url.to_string(),
            host: host.to_owned(),
            port,
            database: url.path().trim_start_matches('/').to_owned(),
            user: url.user().map(str::to_owned),
            password: url.password().map(str::to_owned),
            tls: super::tls::driver_options(url)?,
            create: true,
        })
    }

    /// The TLS option `name` of the query, checked (`super::tls`).
    fn tls(&self, name: &str) -> Option<&str> {
        self.tls.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// The driver's options for this server, typed: what sqlx would read from the URL,
    /// without writing the password into a string again.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(&self) -> Result<sqlx::postgres::PgConnectOptions> {
        driver_options!(self, self.postgres_base(), "sslmode", ssl_root_cert("sslrootcert"))
    }

    /// What the typed PostgreSQL options start from. For a server without a password, sqlx
    /// takes one from `~/.pgpass` (or `PGPASSFILE`) when it parses a URL, matched on that
    /// URL's host, port, user and database, but its builder (`PgConnectOptions::new`)
    /// matches only the environment's defaults: so such a server starts from a URL that
    /// names it and holds no secret, as its URL did before it was parsed into this config.
    #[cfg(feature = "postgres")]
    fn postgres_base(&self) -> sqlx::postgres::PgConnectOptions {
        use sqlx::postgres::PgConnectOptions;
        if self.password.is_some() {
            return PgConnectOptions::new_without_pgpass();
        }
        let Ok(mut u) = url::Url::parse("postgres://localhost/") else { return PgConnectOptions::new() };
        if self.host.is_empty() || u.set_host(Some(&self.host)).is_err() || u.set_port(self.port).is_err() {
            return PgConnectOptions::new();
        }
        if let Some(user) = &self.user {
            if u.set_username(user).is_err() {
                return PgConnectOptions::new();
            }
        }
        u.set_path(&self.database);
        u.as_str().parse().unwrap_or_else(|_| PgConnectOptions::new())
    }

    /// [`postgres`](Self::postgres) for MySQL and MariaDB.
    #[cfg(feature = "mysql")]
    pub(crate) fn mysql(&self) -> Result<sqlx::mysql::MySqlConnectOptions> {
        driver_options!(self, sqlx::mysql::MySqlConnectOptions::new(), "ssl-mode", ssl_ca("ssl-ca"))
    }
}

/// The two drivers' option builders have the same methods but no common trait: one body
/// for both, with each database's TLS names.
#[cfg(any(feature = "postgres", feature = "mysql"))]
macro_rules! driver_options {
    ($c:expr, $new:expr, $mode:literal, $ca:ident($ca_name:literal)) => {{
        let c = $c;
        let mut o = $new;
        if !c.host.is_empty() {
            o = o.host(&c.host);
        }
        if let Some(p) = c.port {
            o = o.port(p);
        }
        if let Some(u) = &c.user {
            o = o.username(u);
        }
        if let Some(p) = &c.password {
            o = o.password(p);
        }
        if !c.database.is_empty() {
            o = o.database(&c.database);
        }
        if let Some(mode) = c.tls($mode) {
            let bad = |e| Error::invalid_url(format!("option `{}` of {}: {e}", $mode, c.shown));
            o = o.ssl_mode(mode.parse().map_err(bad)?);
        }
        if let Some(ca) = c.tls($ca_name) {
            o = o.$ca(ca);
        }
        Ok(o)
    }};
}
#[cfg(any(feature = "postgres", feature = "mysql"))]
use driver_options;

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
        let o = c.postgres().unwrap();
        assert_eq!((o.get_host(), o.get_port(), o.get_username(), o.get_database()), ("h", 5432, "u", Some("db")));
        assert_eq!(c.password.as_deref(), Some("p w"));
        assert!(!format!("{c:?}").contains("p w") && !c.shown.contains("p%20w"), "{c:?}");
        assert_eq!(parse("postgres://h/db?busy_timeout=1s").unwrap_err().kind(), ErrorKind::InvalidUrl);
        let SqlConfig::Postgres(c) = parse("postgres://h/db?create=false").unwrap() else { panic!() };
        assert!(!c.create);
        assert_eq!(parse("postgres://h/db?create=no").unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    /// A server URL without a password takes its password from the pgpass file, matched on
    /// the URL's own host, port, user and database (as sqlx's URL parser does). Run in a
    /// child process of this test binary: PGPASSFILE is process-wide.
    #[cfg(feature = "postgres")]
    #[test]
    fn a_url_without_a_password_takes_the_pgpass_entry_of_its_own_server() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        let entries = "other.example:5433:app:alice:wrong\ndb.example:5433:app:alice:from-pgpass\n";
        std::fs::write(&file, entries).unwrap();
        // Like libpq, sqlx ignores a pgpass file that others may read.
        #[cfg(unix)]
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "store::sql::config::tests::pgpass_child", "--ignored", "--nocapture"])
            .env("PGPASSFILE", &file)
            .env_remove("PGPASSWORD")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("PGPASS without=Some(\"from-pgpass\")"), "{stdout}");
        assert!(stdout.contains("PGPASS with=Some(\"given\")"), "{stdout}");
    }

    #[cfg(feature = "postgres")]
    #[test]
    #[ignore = "child process of a_url_without_a_password_takes_the_pgpass_entry_of_its_own_server"]
    fn pgpass_child() {
        let password = |url: &str| {
            let SqlConfig::Postgres(c) = parse(url).unwrap() else { panic!() };
            let o = format!("{:?}", c.postgres().unwrap());
            o.split("password: ").nth(1).and_then(|r| r.split(", ").next()).unwrap_or("").to_owned()
        };
        println!("PGPASS without={}", password("postgres://alice@db.example:5433/app"));
        println!("PGPASS with={}", password("postgres://alice:given@db.example:5433/app"));
    }

    #[cfg(all(feature = "postgres", feature = "mysql"))]
    #[test]
    fn tls_options_go_to_the_driver_under_each_database_s_names() {
        let SqlConfig::Postgres(c) = parse("postgres://u:p@h/db?sslmode=require&lease=5s").unwrap() else { panic!() };
        assert!(matches!(c.postgres().unwrap().get_ssl_mode(), sqlx::postgres::PgSslMode::Require));
        let SqlConfig::Mysql(c) = parse("mysql://h/db?ssl-mode=required").unwrap() else { panic!() };
        assert!(matches!(c.mysql().unwrap().get_ssl_mode(), sqlx::mysql::MySqlSslMode::Required));
        // Each database's own spelling only: the other's is a typo here.
        assert_eq!(parse("mysql://h/db?sslmode=require").unwrap_err().kind(), ErrorKind::InvalidUrl);
        assert_eq!(parse("postgres://h/db?ssl-mode=REQUIRED").unwrap_err().kind(), ErrorKind::InvalidUrl);
        assert_eq!(parse("postgres://h/db?sslmode=on").unwrap_err().kind(), ErrorKind::InvalidUrl);
    }
}
