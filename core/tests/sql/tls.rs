//! TLS on `postgres://` (`sslmode`, `sslrootcert`) and `mysql://` (`ssl-mode`, `ssl-ca`),
//! against a PostgreSQL and a MariaDB of this test's own that serve TLS only (never the
//! shared servers): locks work over verified TLS in baton's own design and in the lock
//! schemes, the server sees the sessions encrypted, and a plain connection, a wrong CA or
//! a missing CA file fail typed, the password in no message.
#![cfg(any(feature = "postgres", feature = "mysql"))]

use std::path::Path;
use std::time::Duration;

use baton::{Client, ErrorKind};
use baton_testkit::behaviour::{bounded, unique};
use baton_testkit::{Certs, OWN_TLS_PASSWORD};

const LIMIT: Duration = Duration::from_secs(30);

/// `base` with the query `query`.
fn with(base: &str, query: &str) -> String {
    format!("{base}?{query}")
}

/// Connects to `url`, takes a lock, runs `while_held` (the session is in use then), and
/// releases it.
async fn lock_round(url: &str, while_held: impl Future<Output = ()>) {
    let c = bounded("connect", LIMIT, Client::connect(url)).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    let g = bounded("acquire", LIMIT, c.lock(&unique("tls")).acquire()).await.unwrap();
    while_held.await;
    bounded("release", LIMIT, g.release()).await.unwrap();
    c.close().await;
}

/// `url` fails to connect with `kind`, and its message names `needle` but not the password.
async fn refused(url: &str, kind: ErrorKind, needle: &str) {
    let e = bounded("a refused connect", LIMIT, Client::connect(url)).await.expect_err(url);
    assert_eq!(e.kind(), kind, "{url}: {e}");
    assert!(!e.to_string().contains(OWN_TLS_PASSWORD), "the password in {e}");
    assert!(e.to_string().contains(needle), "{e} does not name `{needle}`");
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let certs = Certs::generate(dir.path(), "pg");
    let other = Certs::generate(dir.path(), "other");
    let pg = baton_testkit::OwnPostgres::start_tls(certs.files()).await.unwrap();
    let base = pg.url();
    let verified = format!("sslmode=verify-full&sslrootcert={}", path(&certs.ca));
    // A session of the test's own, with the same options: sqlx reads them as baton hands
    // them on.
    let mut probe = sqlx::PgConnection::connect(&with(&base, &verified)).await.unwrap();
    let (own,): (bool,) =
        sqlx::query_as("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetch_one(&mut probe).await.unwrap();
    assert!(own, "the probe's own session is not encrypted");
    for scheme in ["", "&scheme=table", "&scheme=advisory"] {
        let url = with(&base, &format!("{verified}{scheme}"));
        let sessions = async {
            // Every other client session (baton's, an advisory hold's pinned one among
            // them) is encrypted.
            let (n, all_ssl): (i64, bool) = sqlx::query_as(
                "SELECT count(*), coalesce(bool_and(s.ssl), false) FROM pg_stat_ssl s JOIN pg_stat_activity a \
                 USING (pid) WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()",
            )
            .fetch_one(&mut probe)
            .await
            .unwrap();
            assert!(n >= 1 && all_ssl, "{scheme}: {n} sessions, all encrypted: {all_ssl}");
        };
        lock_round(&url, sessions).await;
    }
    // `verify-ca` checks the chain but not the name; `require` encrypts, checking nothing.
    lock_round(&with(&base, &format!("sslmode=verify-ca&sslrootcert={}", path(&certs.ca))), async {}).await;
    lock_round(&with(&base, "sslmode=require&scheme=table"), async {}).await;
    // `hostssl` only: a plain session is refused by the server.
    refused(&with(&base, "sslmode=disable"), ErrorKind::Connection, "PostgreSQL").await;
    refused(&with(&base, "sslmode=disable&scheme=advisory"), ErrorKind::Connection, "scheme advisory").await;
    // Another CA: the server's certificate is not trusted.
    let wrong = format!("sslmode=verify-full&sslrootcert={}", path(&other.ca));
    refused(&with(&base, &wrong), ErrorKind::Connection, "PostgreSQL").await;
    refused(&with(&base, &format!("{wrong}&scheme=table")), ErrorKind::Connection, "scheme table").await;
    let wrong_ca = format!("sslmode=verify-ca&sslrootcert={}", path(&other.ca));
    refused(&with(&base, &wrong_ca), ErrorKind::Connection, "PostgreSQL").await;
    // A CA file that is not there fails before any connection, naming it.
    let missing = dir.path().join("missing-ca.pem");
    refused(
        &with(&base, &format!("sslmode=verify-ca&sslrootcert={}", path(&missing))),
        ErrorKind::InvalidUrl,
        "missing-ca.pem",
    )
    .await;
    refused(&with(&base, "sslmode=verify-everything"), ErrorKind::InvalidUrl, "sslmode").await;
    let _ = probe.close().await;
}

#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_over_tls() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let certs = Certs::generate(dir.path(), "maria");
    let other = Certs::generate(dir.path(), "other");
    let db = baton_testkit::OwnMariaDb::start_tls(certs.files()).await.unwrap();
    // The user created `REQUIRE SSL`: each of baton's sessions must be encrypted to log in.
    let base = db.tls_user_url();
    // The certificate names 127.0.0.1, so the strictest mode fits.
    let verified = format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={}", path(&certs.ca));
    let mut probe = sqlx::MySqlConnection::connect(&with(&base, &verified)).await.unwrap();
    let (_, cipher): (String, String) =
        sqlx::query_as("SHOW SESSION STATUS LIKE 'Ssl_cipher'").fetch_one(&mut probe).await.unwrap();
    assert!(!cipher.is_empty(), "the probe's own session is not encrypted");
    let _ = probe.close().await;
    for scheme in ["", "&scheme=for-update"] {
        lock_round(&with(&base, &format!("{verified}{scheme}")), async {}).await;
    }
    // Case-insensitive, as the mysql client reads it.
    lock_round(&with(&base, &format!("ssl-mode=verify_ca&ssl-ca={}&scheme=table", path(&certs.ca))), async {}).await;
    refused(&with(&base, "ssl-mode=DISABLED"), ErrorKind::Connection, "MySQL").await;
    refused(&with(&base, "ssl-mode=DISABLED&scheme=for-update"), ErrorKind::Connection, "scheme for-update").await;
    let wrong = format!("ssl-mode=VERIFY_CA&ssl-ca={}", path(&other.ca));
    refused(&with(&base, &wrong), ErrorKind::Connection, "MySQL").await;
    refused(&with(&base, "ssl-mode=on"), ErrorKind::InvalidUrl, "ssl-mode").await;
}
