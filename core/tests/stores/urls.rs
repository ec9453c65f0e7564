//! Store URLs on every scheme (issue #39 items 8, 15 and 16): a raw password holding `/`,
//! `@`, `:`, `?` or `#` never shows in a message, neither in a bad URL's `InvalidUrl` nor
//! in a connection failure; percent-decoding that gives no UTF-8 is `InvalidUrl` naming
//! the part; and a Redis or Redlock login refused (a wrong password) or missing (a
//! `requirepass` server asked with none) is one short `Connection` error.
#![cfg(all(
    feature = "sqlite",
    feature = "postgres",
    feature = "mysql",
    feature = "redis",
    feature = "redlock",
    feature = "etcd",
    feature = "etcd-http",
    feature = "zookeeper"
))]

use std::time::Duration;

use baton::{Client, Error, ErrorKind};
use baton_testkit::{OwnRedis, tools_present};

/// Every scheme baton has, the path it needs and options that make a closed port fail
/// fast (a closed port is refused at once; the bounds are for a loaded machine).
const SCHEMES: &[(&str, &str, &str)] = &[
    ("memory", "", ""),
    ("sqlite", "/nonexistent-baton-dir/sub/a.db", ""),
    ("redis", "", "connect_timeout=1s&timeout=1s"),
    ("rediss", "", "connect_timeout=1s&timeout=1s"),
    ("redis+cluster", "", "connect_timeout=1s&timeout=1s"),
    ("rediss+cluster", "", "connect_timeout=1s&timeout=1s"),
    ("redis+sentinel", "/mymaster", "connect_timeout=1s&timeout=1s"),
    ("rediss+sentinel", "/mymaster", "connect_timeout=1s&timeout=1s"),
    ("redlock", "", "connect_timeout=1s&node_timeout=500ms&retry_count=0"),
    ("etcd", "", "connect_timeout=1s&timeout=1s"),
    ("etcds", "", "connect_timeout=1s&timeout=1s"),
    ("etcd+http", "", "connect_timeout=1s&timeout=1s"),
    ("etcd+https", "", "connect_timeout=1s&timeout=1s"),
    ("postgres", "/db", ""),
    ("postgresql", "/db", ""),
    ("mysql", "/db", ""),
    ("zk", "", "session_timeout=2s&connect_timeout=1s&timeout=1s"),
    ("zks", "", "session_timeout=2s&connect_timeout=1s&timeout=1s"),
];

/// Raw passwords (not percent-encoded) with the characters that end URL parts: the issue's
/// `a/b@cd`, one with every such character, and one whose pieces are distinctive enough to
/// look for each alone.
const PASSWORDS: &[&str] = &["a/b@cd", "p@ss:w/rd?x#y", "Qz/Kx@Vw:Jm?Hy#Rt@Lp"];

/// What of `password` must not show: all of it, every piece of 4 characters or more, the
/// part after its last `@` with that `@` (`@cd`), and in the distinctive one each run of
/// letters (`Qz`, `Kx`, …). (Single letters and `cd` alone occur in ordinary words: etcd.)
fn secrets(password: &str) -> Vec<String> {
    let chars: Vec<char> = password.chars().collect();
    let mut out = vec![password.to_owned()];
    for len in 4..chars.len() {
        out.extend(chars.windows(len).map(|w| w.iter().collect::<String>()));
    }
    if let Some(at) = password.rfind('@') {
        out.push(password[at..].to_owned());
    }
    if password.starts_with("Qz") {
        out.extend(password.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_owned));
    }
    out
}

/// `e`'s message and `Debug` (with the driver's error behind it) hold none of `password`.
fn assert_hidden(url: &str, e: &Error, password: &str) {
    let shown = format!("{e} {e:?}");
    for s in secrets(password) {
        assert!(!shown.contains(&s), "`{s}` of the password of {url} shows in: {shown}");
    }
}

/// What connecting to `url` and taking a lock there ends with: the first error (a
/// `redlock://` client starts with its nodes down; its first step fails). Bounded.
async fn first_error(url: &str) -> Option<Error> {
    let attempt = async {
        let c = Client::connect(url).await?;
        let r = c.lock("urls/probe").try_acquire().await.map(drop);
        c.close().await;
        r
    };
    tokio::time::timeout(Duration::from_secs(30), attempt).await.unwrap_or_else(|_| panic!("{url}: hung")).err()
}

/// Item 8: on every scheme, a bad URL (an unknown option) is `InvalidUrl` and a failing
/// connection (a closed port) fails, and neither message shows any part of a raw password
/// with `/` and `@` in it. Before the fix the redaction stopped at the first `@`:
/// `redis://u:a/b@cd@127.0.0.1:1?bogus` was shown as `redis://u:***@cd@127.0.0.1:1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_password_with_slash_and_at_never_shows() {
    let dir = tempfile::tempdir().unwrap();
    for password in PASSWORDS {
        for (scheme, path, fast) in SCHEMES {
            let host = match *scheme {
                "memory" => "",
                "sqlite" => "",
                _ => "127.0.0.1:1",
            };
            let base = format!("{scheme}://u:{password}@{host}{path}");
            let bad = if fast.is_empty() { format!("{base}?bogus=1") } else { format!("{base}?{fast}&bogus=1") };
            let e = Client::connect(&bad).await.expect_err(&bad);
            assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{bad}: {e}");
            assert!(e.message().contains("bogus"), "{bad}: {e}");
            assert_hidden(&bad, &e, password);
            if *scheme == "memory" {
                continue;
            }
            let failing = if fast.is_empty() { base.clone() } else { format!("{base}?{fast}") };
            let failing = failing.replace("/nonexistent-baton-dir", &format!("{}/missing", dir.path().display()));
            let e = first_error(&failing).await.unwrap_or_else(|| panic!("{failing}: connected"));
            if *scheme != "sqlite" {
                assert_eq!(e.kind(), ErrorKind::Connection, "{failing}: {e}");
            }
            assert_hidden(&failing, &e, password);
        }
    }
}

/// Item 16: a percent-encoded option, user name or path that decodes to bytes that are no
/// UTF-8 is `InvalidUrl` naming the part, on every scheme. Before the fix `prefix=%FF`
/// decoded lossily to U+FFFD, so `%FF` and `%FE` were one prefix: one namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn percent_decoding_to_no_utf8_is_invalid_url() {
    for (scheme, path, _) in SCHEMES {
        let host = if matches!(*scheme, "memory" | "sqlite") { "" } else { "127.0.0.1:1" };
        let path = if *scheme == "sqlite" { "/tmp/urls-utf8.db" } else { path };
        for (part, url) in [
            ("option `prefix`", format!("{scheme}://{host}{path}?prefix=%FF")),
            ("option `prefix`", format!("{scheme}://{host}{path}?prefix=a%C3%28")),
            ("the user name", format!("{scheme}://%FE:pw@{host}{path}")),
            ("the password", format!("{scheme}://u:hunter2%FF@{host}{path}")),
        ] {
            let e = Client::connect(&url).await.expect_err(&url);
            assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{url}: {e}");
            assert!(e.message().starts_with(part) && e.message().contains("UTF-8"), "{url}: {e}");
            assert!(!e.to_string().contains("hunter2"), "{url}: {e}");
        }
    }
    // The same bytes as valid UTF-8 stay what they say.
    let c = Client::connect("memory://?prefix=%C3%A9t%C3%A9/").await.unwrap();
    let g = c.lock("x").acquire().await.unwrap();
    g.release().await.unwrap();
    c.close().await;
}

/// An error's whole text must stay short: one line a person reads, not a dump.
const SHORT: usize = 300;

/// The check of a refused or missing login: `Connection`, short, saying which, and no
/// password in it.
fn assert_refused(url: &str, e: &Error, says: &str, passwords: &[&str]) {
    assert_eq!(e.kind(), ErrorKind::Connection, "{url}: {e}");
    let text = e.to_string();
    assert!(text.len() < SHORT, "{url}: {} bytes: {text}", text.len());
    assert!(text.contains(says), "{url}: {text}");
    assert!(!text.contains("Pipeline"), "{url}: {text}");
    let shown = format!("{e} {e:?}");
    for p in passwords {
        assert!(!shown.contains(p), "{url}: a password in {shown}");
    }
}

/// Item 15 (Redis, Redlock): redis-servers of the test's own with `requirepass`. No
/// password and a wrong one (also as an unknown user) are each one short `Connection`
/// error, on `redis://` (at connect) and on `redlock://` over three such servers (its
/// nodes connect lazily: the first step fails) — never `Backend`, never the driver's
/// "Pipeline failures" dump of every script load refused with `NOAUTH`. The right
/// password works on both. Before the fix: `redis://` without a password was `Backend`
/// with a 1 487-byte dump, `redlock://` with a wrong one `Backend`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_or_missing_redis_password_is_one_short_connection_error() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let pw = "Req-Pass-8812";
    let start = || {
        let mut r = OwnRedis::configure(tempfile::tempdir().unwrap(), None, |a| {
            a.extend(["--requirepass".to_owned(), pw.to_owned()]);
        })
        .unwrap();
        r.run().unwrap();
        r
    };
    let nodes = [start(), start(), start()];
    let one = format!("127.0.0.1:{}", nodes[0].port);
    let all = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect::<Vec<_>>().join(",");
    let fast = "connect_timeout=2s&timeout=2s";
    let redlock = "connect_timeout=2s&node_timeout=1s&retry_count=0";
    let wrong = "Wrong-Pass-4711";
    let mut checked = 0;
    for (url, says) in [
        (format!("redis://{one}?{fast}"), "requires a password (NOAUTH)"),
        (format!("redis://{one}/2?{fast}"), "requires a password (NOAUTH)"),
        (format!("redis://{one}?{fast}&scheme=simple"), "requires a password (NOAUTH)"),
        (format!("redis://:{wrong}@{one}?{fast}"), "refused the credentials"),
        (format!("redis://nobody:{wrong}@{one}?{fast}"), "refused the credentials"),
        (format!("redlock://{all}?{redlock}"), "requires a password (NOAUTH)"),
        (format!("redlock://{one}?{redlock}"), "requires a password (NOAUTH)"),
        (format!("redlock://:{wrong}@{all}?{redlock}"), "refused the credentials"),
        (format!("redlock://nobody:{wrong}@{one}?{redlock}"), "refused the credentials"),
    ] {
        let e = first_error(&url).await.unwrap_or_else(|| panic!("{url}: granted without the password"));
        assert_refused(&url, &e, says, &[pw, wrong]);
        checked += 1;
    }
    assert_eq!(checked, 9);
    for url in [format!("redis://:{pw}@{one}?{fast}"), format!("redlock://:{pw}@{all}?{redlock}")] {
        assert!(first_error(&url).await.is_none(), "{url}: the right password");
    }
}
