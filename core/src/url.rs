//! Store URLs: parsing, query options and a redacted `Display` that never shows passwords.

use std::fmt;

use crate::error::{Error, Result};

/// Options every scheme accepts (read by `Client::connect`).
pub(crate) const COMMON_OPTIONS: &[&str] = &["lease", "renew", "prefix"];

/// A parsed store URL (`scheme://[user[:password]@]hosts[/path][?options]`).
///
/// Hosts may be a comma-separated list (`redlock://h1:7001,h2:7002`), which general URL
/// parsers reject, so baton parses the shape itself. `Display` redacts the password.
///
/// ```
/// let u = baton::StoreUrl::parse("redis://app:s3cret@127.0.0.1:6379/0?prefix=x").unwrap();
/// assert_eq!(u.scheme(), "redis");
/// assert_eq!(u.to_string(), "redis://app:***@127.0.0.1:6379/0?prefix=x");
/// assert_eq!(u.option("prefix"), Some("x"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl {
    raw: String,
    scheme: String,
    user: Option<String>,
    password: Option<String>,
    hosts: String,
    path: String,
    options: Vec<(String, String)>,
}

impl StoreUrl {
    /// Parses `url`; a malformed URL is `InvalidUrl` with the offending part (redacted).
    pub fn parse(url: &str) -> Result<StoreUrl> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| {
            Error::invalid_url(format!(
                "`{}` is not a store URL: expected scheme://… such as sqlite:///path/file.db or redis://127.0.0.1:6379",
                redact(url)
            ))
        })?;
        if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) {
            return Err(Error::invalid_url(format!("`{}` has an invalid scheme", redact(url))));
        }
        if url.contains('\0') {
            return Err(Error::invalid_url("store URL contains a NUL byte"));
        }
        // `user:pa/ss@host`, `user:a/b@cd@host`: a raw `/`, `?`, `#` or `@` in the password.
        // Taken for what it means (and never echoed) rather than split there.
        let (userinfo, rest) = match userinfo_end(rest) {
            Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
            None => (None, rest),
        };
        let (before_query, query) = match rest.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (rest, None),
        };
        let (hosts, path) = match before_query.find('/') {
            Some(i) => before_query.split_at(i),
            None => (before_query, ""),
        };
        let bad = |what: &str| {
            Error::invalid_url(format!(
                "{what} of {} is not UTF-8 once percent-decoded: write text, each byte of its UTF-8 as %XX",
                redact(url)
            ))
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(ui) => {
                let (u, p) = ui.split_once(':').map_or((ui, None), |(u, p)| (u, Some(p)));
                let user = percent_decode(u, false).ok_or_else(|| bad("the user name"))?;
                let password = p.map(|p| percent_decode(p, false).ok_or_else(|| bad("the password"))).transpose()?;
                (Some(user), password)
            }
        };
        let path = percent_decode(path, false).ok_or_else(|| bad("the path"))?;
        let mut options = Vec::new();
        for kv in query.unwrap_or("").split('&').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let k = percent_decode(k, true).ok_or_else(|| bad("an option name"))?;
            let v = percent_decode(v, true).ok_or_else(|| bad(&format!("option `{k}`")))?;
            options.push((k, v));
        }
        Ok(StoreUrl {
            raw: url.to_owned(),
            scheme: scheme.to_ascii_lowercase(),
            user,
            password,
            hosts: hosts.to_owned(),
            path,
            options,
        })
    }

    /// The scheme, lower-cased (`sqlite`, `redis+cluster`, …).
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The user name, if any.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The password, if any. Never put it in a message; use `Display`.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The host part: `host:port`, a comma-separated list, or empty.
    pub fn hosts(&self) -> &str {
        &self.hosts
    }

    /// The hosts split on commas, empty entries dropped.
    pub fn host_list(&self) -> Vec<&str> {
        self.hosts.split(',').filter(|h| !h.is_empty()).collect()
    }

    /// The percent-decoded path, with its leading `/` (empty when absent).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The value of query option `key` (the last one when repeated).
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every query option, in order.
    pub fn options(&self) -> &[(String, String)] {
        &self.options
    }

    /// Fails with `InvalidUrl` on the first option not in `known` (typos should not
    /// silently fall back to defaults).
    pub fn check_options(&self, known: &[&str]) -> Result<()> {
        match self.options.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some((k, _)) => Err(Error::invalid_url(format!(
                "unknown option `{k}` in {self}; known options for {}:// are: {}",
                self.scheme,
                known.join(", ")
            ))),
        }
    }
}

impl StoreUrl {
    /// The duration option `name` (`default` when absent), checked as every timeout and
    /// lease is: a bad or out-of-range value names the option and this URL (redacted).
    #[cfg_attr(not(any(feature = "redis", feature = "etcd", feature = "etcd-http")), allow(dead_code))]
    pub(crate) fn duration_option(&self, name: &str, default: std::time::Duration) -> Result<std::time::Duration> {
        match self.option(name) {
            None => Ok(default),
            Some(v) => crate::duration::parse(v)
                .and_then(|d| crate::duration::validate(name, d))
                .map_err(|e| Error::invalid_argument(format!("option `{name}` of {self}: {}", e.message()))),
        }
    }

    /// `?ca=`: the PEM file of the roots a TLS connection trusts instead of the system's,
    /// read and checked (`None` when absent). Refused on a plain scheme (`tls` false), whose
    /// TLS forms `tls_schemes` names.
    #[cfg_attr(not(any(feature = "redis", feature = "etcd", feature = "etcd-http")), allow(dead_code))]
    pub(crate) fn ca_pem(&self, tls: bool, tls_schemes: &str) -> Result<Option<Vec<u8>>> {
        match self.option("ca") {
            None => Ok(None),
            Some(_) if !tls => Err(Error::invalid_argument(format!(
                "option `ca` of {self} applies to TLS connections only: use {tls_schemes}"
            ))),
            Some(_) => self.pem_file("ca").map(Some).map_err(Error::invalid_argument),
        }
    }

    /// The PEM certificates of the CA file that option `option` names, read and checked;
    /// the error is the message, naming the option, the file and this URL (redacted).
    #[cfg_attr(
        not(any(feature = "redis", feature = "etcd", feature = "etcd-http", feature = "postgres", feature = "mysql")),
        allow(dead_code)
    )]
    pub(crate) fn pem_file(&self, option: &str) -> std::result::Result<Vec<u8>, String> {
        let path = self.option(option).unwrap_or_default();
        if path.is_empty() {
            return Err(format!("option `{option}` of {self} is empty"));
        }
        let pem = std::fs::read(path)
            .map_err(|e| format!("option `{option}` of {self}: cannot read the CA file `{path}`: {e}"))?;
        if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
            return Err(format!(
                "option `{option}` of {self}: `{path}` holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
            ));
        }
        Ok(pem)
    }

    /// What names the store itself: scheme, hosts and path, without credentials or
    /// options.
    pub(crate) fn identity(&self) -> String {
        format!("{}://{}{}", self.scheme, self.hosts, self.path)
    }

    /// This URL with another scheme, one `host` instead of the list and `options` as its
    /// query; the credentials and the path stay as written (`redlock://` opens one
    /// `redis://` store per node this way).
    #[cfg_attr(not(feature = "redlock"), allow(dead_code))]
    pub(crate) fn with_host(&self, scheme: &str, host: &str, options: &[(String, String)]) -> Result<StoreUrl> {
        // The credentials percent-encoded again: whatever raw `/`, `?` or `@` the password
        // held, the node's URL parses to the same user and password.
        let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>().replace('+', "%20");
        let userinfo = match (&self.user, &self.password) {
            (Some(u), Some(p)) => format!("{}:{}@", enc(u), enc(p)),
            (Some(u), None) => format!("{}@", enc(u)),
            (None, _) => String::new(),
        };
        // The path as written (it decodes to `self.path`).
        let rest = self.raw.split_once("://").map_or("", |(_, r)| r);
        let after = userinfo_end(rest).map_or(rest, |at| &rest[at + 1..]);
        let before_query = after.split_once('?').map_or(after, |(b, _)| b);
        let path = before_query.find('/').map_or("", |i| &before_query[i..]);
        let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(options).finish();
        let query = if query.is_empty() { query } else { format!("?{query}") };
        StoreUrl::parse(&format!("{scheme}://{userinfo}{host}{path}{query}"))
    }
}

/// Percent-decodes `s` (`+` as a space too in a query, `plus_is_space`); `None` when the
/// bytes are not UTF-8 (a lossy decoding would give two different values one meaning:
/// `prefix=%FF` and `prefix=%FE` would share one namespace). A `%` not followed by two
/// hex digits stays as written.
fn percent_decode(s: &str, plus_is_space: bool) -> Option<String> {
    let hex = |b: u8| char::from(b).to_digit(16);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
            (b'+', _, _) if plus_is_space => out.push(b' '),
            (c, _, _) => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Where the user info of `rest` (a URL after its `scheme://`) ends: the offset of its
/// `@`, if it has one. Parsing and redaction both ask this, so what `Display` hides is
/// exactly what was taken as the password.
///
/// The user info ends at the last `@` that an authority can follow (no other `@` before
/// the next `/`, `?` or `#`), so a raw `@`, `/`, `?` or `#` in the password stays in the
/// password (`u:a/b@cd@host`, `u:p@ss:w/rd?x#y@host`). An `@` after a raw `/`, `?` or
/// `#` ends user info only after `user:password`, where the password does not start like
/// a port (`h:6379/0?prefix=a@b` has none, nor has `sqlite:///tmp/a@b.db`). And when the
/// text before such an `@` holds a query (`?k=`) while a plain `user:pw@host` precedes
/// it, the plain one is the user info (`u:pw@h/0?prefix=a@b`). So in a URL whose password
/// holds a raw `/`, `?` or `#`, an `@` in the path must be written `%40`.
fn userinfo_end(rest: &str) -> Option<usize> {
    let follows_authority = |i: usize| {
        let after = &rest[i + 1..];
        !after[..after.find(['/', '?', '#']).unwrap_or(after.len())].contains('@')
    };
    let plain = |i: usize| !rest[..i].contains(['/', '?', '#']);
    let raw_password = |i: usize| {
        let Some((user, pass)) = rest[..i].split_once(':') else { return false };
        let digits = pass.bytes().take_while(u8::is_ascii_digit).count();
        let port = digits > 0 && matches!(pass.as_bytes().get(digits), None | Some(b'/' | b'?' | b'#' | b','));
        !user.contains(['/', '?', '#', '@', '[', ']', ',']) && !port
    };
    let ats = || rest.match_indices('@').map(|(i, _)| i).rev().filter(|i| follows_authority(*i));
    let last_plain = ats().find(|i| plain(*i));
    let last_raw = ats().find(|i| !plain(*i) && raw_password(*i));
    let query_before = |i: usize| rest[..i].find('?').is_some_and(|q| rest[q..i].contains('='));
    match (last_raw, last_plain) {
        (Some(r), Some(p)) if query_before(r) => Some(p),
        (Some(r), _) => Some(r),
        (None, p) => p,
    }
}

/// The one redaction of baton's messages: `s` (a store URL, parsed or not) with the
/// password of its user info (see [`userinfo_end`]) and the value of every query option
/// named `…password` (`redis+sentinel://…?sentinel_password=`) shown as `***`.
fn redact(s: &str) -> String {
    let (head, rest) = match s.split_once("://") {
        Some((h, r)) => (&s[..h.len() + 3], r),
        None => ("", s),
    };
    let (shown, after) = match userinfo_end(rest) {
        Some(at) => {
            let ui = &rest[..at];
            let user = ui.split_once(':').map_or(ui.to_owned(), |(u, _)| format!("{u}:***"));
            (format!("{head}{user}@"), &rest[at + 1..])
        }
        None => (head.to_owned(), rest),
    };
    let Some((authority_path, query)) = after.split_once('?') else { return format!("{shown}{after}") };
    let query: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if percent_decode(k, true).unwrap_or_default().to_ascii_lowercase().ends_with("password") => {
                format!("{k}=***")
            }
            _ => kv.to_owned(),
        })
        .collect();
    format!("{shown}{authority_path}?{}", query.join("&"))
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.raw))
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_shapes() {
        let u = StoreUrl::parse("sqlite:///tmp/a%20b.db?busy_timeout=5s").unwrap();
        assert_eq!((u.scheme(), u.hosts(), u.path()), ("sqlite", "", "/tmp/a b.db"));
        assert_eq!(u.option("busy_timeout"), Some("5s"));
        let u = StoreUrl::parse("redlock://h1:7001,h2:7002,h3:7003").unwrap();
        assert_eq!(u.host_list(), ["h1:7001", "h2:7002", "h3:7003"]);
        let u = StoreUrl::parse("memory://").unwrap();
        assert_eq!((u.scheme(), u.hosts(), u.path()), ("memory", "", ""));
        let u = StoreUrl::parse("postgres://u:p%40ss@db/x").unwrap();
        assert_eq!((u.user(), u.password(), u.path()), (Some("u"), Some("p@ss"), "/x"));
    }

    #[test]
    fn with_host_keeps_credentials_and_path() {
        let u = StoreUrl::parse("redlock://u:p%40ss@h1:7001,h2:7002/3?retry_count=2&timeout=1s").unwrap();
        let n = u.with_host("redis", "h2:7002", &[("timeout".into(), "1s".into())]).unwrap();
        assert_eq!((n.scheme(), n.hosts(), n.path()), ("redis", "h2:7002", "/3"));
        assert_eq!((n.user(), n.password(), n.option("timeout")), (Some("u"), Some("p@ss"), Some("1s")));
        assert_eq!(n.option("retry_count"), None);
        assert_eq!(n.to_string(), "redis://u:***@h2:7002/3?timeout=1s");
    }

    #[test]
    fn never_shows_passwords() {
        for raw in ["redis://u:hunter2@h:1/0", "redis://:hunter2@h", "bad:u:hunter2@h", "x://a:hunter2@"] {
            let shown = match StoreUrl::parse(raw) {
                Ok(u) => u.to_string(),
                Err(e) => e.to_string(),
            };
            assert!(!shown.contains("hunter2"), "{raw} -> {shown}");
        }
        // A raw `/` or `?` in the password: still the password, never shown.
        for (raw, shown) in [
            ("redis://u:hun/ter2@127.0.0.1:6379/0", "redis://u:***@127.0.0.1:6379/0"),
            ("redis://u:hun?ter2@127.0.0.1:6379?prefix=p", "redis://u:***@127.0.0.1:6379?prefix=p"),
            ("postgres://u:a/b?c@127.0.0.1:5432/db", "postgres://u:***@127.0.0.1:5432/db"),
        ] {
            let u = StoreUrl::parse(raw).unwrap();
            assert_eq!(u.to_string(), shown);
            assert_eq!(u.hosts(), "127.0.0.1:6379".replace("6379", if raw.contains("5432") { "5432" } else { "6379" }));
            assert!(u.password().is_some_and(|p| p.contains('/') || p.contains('?')), "{raw}");
        }
        // Not user info: a port, a host list, an `@` in a path or option.
        for raw in ["redis://h:6379/0?prefix=a@b", "redlock://h1:7001,h2:7002/x@y", "sqlite:///tmp/a@b.db"] {
            let u = StoreUrl::parse(raw).unwrap();
            assert_eq!((u.user(), u.password()), (None, None), "{raw}");
        }
        let u = StoreUrl::parse("redis+sentinel://h:26379/m?sentinel_password=hunter2&prefix=p").unwrap();
        assert_eq!(u.to_string(), "redis+sentinel://h:26379/m?sentinel_password=***&prefix=p");
        assert_eq!(u.option("sentinel_password"), Some("hunter2"));
        let e = StoreUrl::parse("not a url with :hunter2@").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidUrl);
    }

    /// Issue #39 item 8: a raw password with both `/` and `@` (and `:`, `?`, `#`) is the
    /// password up to the last `@` before the host, parsed and redacted alike; an `@` in
    /// the path or query of an ordinary URL stays where it is.
    #[test]
    fn raw_at_and_slash_in_the_password() {
        for (raw, password, hosts, shown) in [
            (
                "redis://u:a/b@cd@127.0.0.1:18380?bogus",
                "a/b@cd",
                "127.0.0.1:18380",
                "redis://u:***@127.0.0.1:18380?bogus",
            ),
            ("redis://u:p@ss:w/rd?x#y@127.0.0.1:1/0", "p@ss:w/rd?x#y", "127.0.0.1:1", "redis://u:***@127.0.0.1:1/0"),
            ("redlock://u:a/b@cd@h1:1,h2:2/3?x=1", "a/b@cd", "h1:1,h2:2", "redlock://u:***@h1:1,h2:2/3?x=1"),
            ("zk://:a/b@cd@h:2181/chroot", "a/b@cd", "h:2181", "zk://:***@h:2181/chroot"),
            ("postgres://u:a@b@h/db", "a@b", "h", "postgres://u:***@h/db"),
            ("redis://u:pw@h/0?prefix=a@b", "pw", "h", "redis://u:***@h/0?prefix=a@b"),
        ] {
            let u = StoreUrl::parse(raw).unwrap();
            assert_eq!((u.password(), u.hosts()), (Some(password), hosts), "{raw}");
            assert_eq!(u.to_string(), shown, "{raw}");
        }
        assert_eq!(StoreUrl::parse("redis://u:pw@h/0?prefix=a@b").unwrap().option("prefix"), Some("a@b"));
        // A node of a redlock:// URL: the same credentials, encoded again; the path as written.
        let u = StoreUrl::parse("redlock://u:a/b@cd@h1:1,h2:2/3?retry_count=1").unwrap();
        let n = u.with_host("redis", "h2:2", &[]).unwrap();
        assert_eq!((n.user(), n.password(), n.hosts(), n.path()), (Some("u"), Some("a/b@cd"), "h2:2", "/3"));
        assert_eq!(n.to_string(), "redis://u:***@h2:2/3");
        // Unparsable: the same redaction.
        let e = StoreUrl::parse("re dis://u:a/b@cd@h").unwrap_err();
        assert!(!e.message().contains("cd") && e.message().contains("u:***@h"), "{e}");
    }

    /// Issue #39 item 16: percent-decoding that yields no UTF-8 is `InvalidUrl` naming the
    /// part (never a lossy U+FFFD: `%FF` and `%FE` would be one prefix), for every part
    /// that decodes; the password's message does not show it.
    #[test]
    fn percent_decoding_must_give_utf8() {
        for (raw, part) in [
            ("memory://?prefix=%FF", "option `prefix`"),
            ("redis://h?prefix=a%C3", "option `prefix`"),
            ("etcd://h?%FF=1", "an option name"),
            ("redis://%FF:pw@h", "the user name"),
            ("postgres://u:hunter2%FF@h/db", "the password"),
            ("sqlite:///tmp/%FF.db", "the path"),
            ("zk://h:2181/a%FEb", "the path"),
        ] {
            let e = StoreUrl::parse(raw).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidUrl, "{raw}: {e}");
            assert!(e.message().starts_with(part), "{raw}: {e}");
            assert!(!e.message().contains("hunter2"), "{raw}: {e}");
        }
        let u = StoreUrl::parse("redis://u%C3%A9:p%2B+@h?prefix=%C3%A9+x&k").unwrap();
        assert_eq!(
            (u.user(), u.password(), u.option("prefix"), u.option("k")),
            (Some("ué"), Some("p++"), Some("é x"), Some(""))
        );
    }

    #[test]
    fn unknown_options_are_errors() {
        let u = StoreUrl::parse("memory://?ttl=3s&bogus=1").unwrap();
        let e = u.check_options(&["ttl"]).unwrap_err();
        assert!(e.message().contains("bogus"), "{e}");
    }
}
