//! Throwaway database servers for the SQL rows' node-loss fault: it kills a server while
//! a lock is held, so it is never the server the user named. A PostgreSQL cluster
//! (`initdb`, `pg_ctl` of Debian's `/usr/lib/postgresql/*/bin`) and a MariaDB server
//! (`mariadb-install-db`, `mariadbd`), each in a temporary directory, on a free loopback
//! port, run as the `postgres`/`mysql` user when the lab runs as root (both refuse root),
//! killed when dropped. Either can serve TLS only (`start_tls`), for the SQL TLS tests.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use baton::{Error, ErrorKind, Result};

use crate::redis_server::TlsFiles;

/// The password of the servers' TLS-only users (the URLs of `start_tls` servers carry it).
pub const OWN_TLS_PASSWORD: &str = "lab-tls-secret";

fn free_port() -> Result<u16> {
    crate::port::free_loopback_port().ok_or_else(|| backend("no free loopback port after 1000 tries"))
}

fn backend(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Backend, format!("lab: own database server: {what}"))
}

#[cfg(unix)]
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(not(unix))]
fn is_root() -> bool {
    false
}

/// `cmd`, run as `user` when the lab runs as root.
fn as_user(user: &str, cmd: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", user, "--"]).arg(cmd);
        c
    } else {
        Command::new(cmd)
    }
}

/// A directory of the lab's own that `user` may write (chowned when the lab runs as root).
fn own_dir(prefix: &str, user: &str) -> Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir().map_err(backend)?;
    if is_root() {
        let ok = Command::new("chown").arg(format!("{user}:{user}")).arg(dir.path()).status().map_err(backend)?;
        if !ok.success() {
            return Err(backend(format!("chown {user} {}", dir.path().display())));
        }
    }
    Ok(dir)
}

/// Copies a server's certificate, key and CA into `dir` as `user`'s own files, the key
/// readable by `user` alone (PostgreSQL refuses a key others can read); returns
/// `[ca, cert, key]`.
fn own_tls_files(dir: &Path, user: &str, tls: TlsFiles<'_>) -> Result<[PathBuf; 3]> {
    let files = [("ca.pem", tls.ca), ("server.pem", tls.cert), ("server.key", tls.key)].map(|(name, from)| {
        let to = dir.join(name);
        std::fs::copy(from, &to).map(|_| to).map_err(|e| backend(format!("copy {}: {e}", from.display())))
    });
    let [ca, cert, key] = files;
    let files = [ca?, cert?, key?];
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&files[2], std::fs::Permissions::from_mode(0o600)).map_err(backend)?;
    }
    if is_root() {
        let ok = Command::new("chown").arg(format!("{user}:{user}")).args(&files).status().map_err(backend)?;
        if !ok.success() {
            return Err(backend(format!("chown {user} {}", dir.display())));
        }
    }
    Ok(files)
}

/// Runs `cmd` to completion off the async threads; its stderr in the error.
async fn run(mut cmd: Command, what: &'static str) -> Result<()> {
    let out = tokio::task::spawn_blocking(move || cmd.stdin(Stdio::null()).output())
        .await
        .map_err(backend)?
        .map_err(|e| backend(format!("{what}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(backend(format!("{what}: {}", String::from_utf8_lossy(&out.stderr).trim())))
    }
}

/// PostgreSQL's server binaries (the newest of `/usr/lib/postgresql/*/bin`).
fn pg_bin() -> Option<PathBuf> {
    std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("pg_ctl").exists() && p.join("initdb").exists())
        .max()
}

/// Whether a PostgreSQL server of the lab's own can be started here.
pub fn own_postgres_available() -> bool {
    pg_bin().is_some() && (!is_root() || which("runuser"))
}

/// Whether a MariaDB server of the lab's own can be started here.
pub fn own_mariadb_available() -> bool {
    which("mariadbd") && which("mariadb-install-db")
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(name).is_file()))
        || Path::new("/usr/sbin").join(name).is_file()
}

/// A PostgreSQL cluster of the lab's own (trust authentication, user `postgres`).
pub struct OwnPostgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    tls: bool,
    _dir: tempfile::TempDir,
}

impl OwnPostgres {
    /// `initdb` and start (≤ 30 s).
    ///
    /// # Errors
    /// `Backend` when PostgreSQL's binaries are missing or the cluster does not start.
    pub async fn start() -> Result<OwnPostgres> {
        OwnPostgres::start_with(None).await
    }

    /// As [`OwnPostgres::start`], serving TLS only with `tls`'s certificate: `hostssl`
    /// is the one TCP line of `pg_hba.conf` (a plain connection is refused), and there
    /// the password ([`OWN_TLS_PASSWORD`]) is checked (SCRAM).
    ///
    /// # Errors
    /// As [`OwnPostgres::start`].
    pub async fn start_tls(tls: TlsFiles<'_>) -> Result<OwnPostgres> {
        OwnPostgres::start_with(Some(tls)).await
    }

    async fn start_with(tls: Option<TlsFiles<'_>>) -> Result<OwnPostgres> {
        let bin = pg_bin().ok_or_else(|| backend("PostgreSQL's server binaries (/usr/lib/postgresql/*/bin)"))?;
        let dir = own_dir("baton-lab-pg-", "postgres")?;
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, OWN_TLS_PASSWORD).map_err(backend)?;
        let mut init = as_user("postgres", &bin.join("initdb"));
        init.arg("-D").arg(&data).args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-N"]);
        init.arg(format!("--pwfile={}", pwfile.display()));
        run(init, "initdb").await?;
        if let Some(tls) = tls {
            let [_, cert, key] = own_tls_files(dir.path(), "postgres", tls)?;
            let conf = format!("ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n", cert.display(), key.display());
            let append = |file: &str, text: &str| -> Result<()> {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().append(true).open(data.join(file)).map_err(backend)?;
                f.write_all(text.as_bytes()).map_err(backend)
            };
            append("postgresql.conf", &conf)?;
            // pg_hba.conf: the first matching line decides; `local` stays trusted for pg_ctl.
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
            )
            .map_err(backend)?;
        }
        let pg = OwnPostgres { bin, data, port: free_port()?, tls: tls.is_some(), _dir: dir };
        pg.start_again().await?;
        Ok(pg)
    }

    /// The server's URL (database `postgres`; with the password on a TLS server).
    pub fn url(&self) -> String {
        let password = if self.tls { format!(":{OWN_TLS_PASSWORD}") } else { String::new() };
        format!("postgres://postgres{password}@127.0.0.1:{}/postgres", self.port)
    }

    fn ctl(&self, args: &[&str]) -> Command {
        let mut c = as_user("postgres", &self.bin.join("pg_ctl"));
        c.arg("-D").arg(&self.data).args(args);
        c
    }

    /// Starts the server again (after [`OwnPostgres::kill`]), waiting until it accepts
    /// connections (≤ 30 s).
    ///
    /// # Errors
    /// `Backend` when it does not start.
    pub async fn start_again(&self) -> Result<()> {
        let dir = self.data.parent().unwrap_or(&self.data).display().to_string();
        let opts = format!("-c listen_addresses=127.0.0.1 -p {} -k {dir} -c fsync=off", self.port);
        let log = self.data.parent().unwrap_or(&self.data).join("log");
        let mut c = self.ctl(&["-w", "-t", "30", "-o", &opts, "start"]);
        c.arg("-l").arg(log);
        run(c, "pg_ctl start").await
    }

    /// Kills the server as a crash would (`pg_ctl stop -m immediate`: no shutdown
    /// checkpoint, crash recovery at the next start).
    ///
    /// # Errors
    /// `Backend` when `pg_ctl` fails.
    pub async fn kill(&self) -> Result<()> {
        run(self.ctl(&["-w", "-m", "immediate", "stop"]), "pg_ctl stop").await
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let _ = self.ctl(&["-m", "immediate", "stop"]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

/// A MariaDB server of the lab's own (`root` without a password, database `lab`).
pub struct OwnMariaDb {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    /// `[ca, cert, key]` of a TLS server.
    tls: Option<[PathBuf; 3]>,
}

impl OwnMariaDb {
    /// `mariadb-install-db`, start, and make the database `lab` (≤ 30 s).
    ///
    /// # Errors
    /// `Backend` when MariaDB is missing or does not start.
    pub async fn start() -> Result<OwnMariaDb> {
        OwnMariaDb::start_with(None).await
    }

    /// As [`OwnMariaDb::start`], serving TLS with `tls`'s certificate, and with a user
    /// created `REQUIRE SSL` ([`OwnMariaDb::tls_user_url`]).
    ///
    /// # Errors
    /// As [`OwnMariaDb::start`].
    pub async fn start_tls(tls: TlsFiles<'_>) -> Result<OwnMariaDb> {
        OwnMariaDb::start_with(Some(tls)).await
    }

    async fn start_with(tls: Option<TlsFiles<'_>>) -> Result<OwnMariaDb> {
        let dir = own_dir("baton-lab-mariadb-", "mysql")?;
        let mut install = Command::new("mariadb-install-db");
        install.arg("--no-defaults");
        if is_root() {
            install.arg("--user=mysql");
        }
        // The tmpdir is the server's own directory: a MariaDB starting up deletes the
        // #sql* files of its tmpdir, so servers sharing /tmp delete each other's temporary
        // tables (mariadb-install-db failed so: "Could not remove temporary table").
        install
            .arg(format!("--datadir={}", dir.path().join("data").display()))
            .arg(format!("--tmpdir={}", dir.path().display()))
            .args(["--skip-test-db", "--auth-root-authentication-method=normal"]);
        run(install, "mariadb-install-db").await?;
        let tls = tls.map(|t| own_tls_files(dir.path(), "mysql", t)).transpose()?;
        let mut db = OwnMariaDb { dir, port: free_port()?, child: None, tls };
        db.start_again().await?;
        use sqlx::Executor;
        let mut c = <sqlx::MySqlConnection as sqlx::Connection>::connect(&db.root_url()).await.map_err(backend)?;
        c.execute("CREATE DATABASE IF NOT EXISTS lab").await.map_err(backend)?;
        if db.tls.is_some() {
            // No anonymous users: ''@localhost would match a login from 127.0.0.1 before
            // any user@'%'.
            c.execute("DELETE FROM mysql.global_priv WHERE User = ''").await.map_err(backend)?;
            c.execute("FLUSH PRIVILEGES").await.map_err(backend)?;
            let user = format!("CREATE USER lab_tls@'%' IDENTIFIED BY '{OWN_TLS_PASSWORD}' REQUIRE SSL");
            c.execute(user.as_str()).await.map_err(backend)?;
            c.execute("GRANT ALL ON lab.* TO lab_tls@'%'").await.map_err(backend)?;
        }
        let _ = sqlx::Connection::close(c).await;
        Ok(db)
    }

    /// The URL of the user who must use TLS (database `lab`; a `start_tls` server's).
    pub fn tls_user_url(&self) -> String {
        format!("mysql://lab_tls:{OWN_TLS_PASSWORD}@127.0.0.1:{}/lab", self.port)
    }

    fn root_url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/mysql", self.port)
    }

    /// The server's URL (database `lab`).
    pub fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/lab", self.port)
    }

    /// Starts the server again (after [`OwnMariaDb::kill`]), waiting until it accepts
    /// logins (≤ 30 s).
    ///
    /// # Errors
    /// `Backend` when it does not start.
    pub async fn start_again(&mut self) -> Result<()> {
        let d = self.dir.path();
        let mut c = Command::new("mariadbd");
        c.arg("--no-defaults");
        if is_root() {
            c.arg("--user=mysql");
        }
        c.arg(format!("--datadir={}", d.join("data").display()))
            .arg(format!("--tmpdir={}", d.display()))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--port={}", self.port))
            .arg(format!("--socket={}", d.join("sock").display()))
            .arg(format!("--pid-file={}", d.join("pid").display()))
            .args(["--skip-log-bin", "--innodb-buffer-pool-size=16M", "--max-connections=500"])
            .args(self.tls.iter().flat_map(|[ca, cert, key]| {
                [
                    format!("--ssl-ca={}", ca.display()),
                    format!("--ssl-cert={}", cert.display()),
                    format!("--ssl-key={}", key.display()),
                ]
            }))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        crate::redis_server::die_with_parent(&mut c);
        self.child = Some(c.spawn().map_err(|e| backend(format!("mariadbd: {e}")))?);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(c) = <sqlx::MySqlConnection as sqlx::Connection>::connect(&self.root_url()).await {
                let _ = sqlx::Connection::close(c).await;
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                return Err(backend(format!("mariadbd exited: {status}")));
            }
            if tokio::time::Instant::now() > deadline {
                return Err(backend("mariadbd did not accept logins in 30 s"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kills the server (SIGKILL: InnoDB recovers its committed transactions at the next
    /// start).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for OwnMariaDb {
    fn drop(&mut self) {
        self.kill();
    }
}
