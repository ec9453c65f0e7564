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
                redact_raw(url)
            ))
        })?;
        if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) {
            return Err(Error::invalid_url(format!("`{}` has an invalid scheme", redact_raw(url))));
        }
        if url.contains('\0') {
            return Err(Error::invalid_url("store URL contains a NUL byte"));
        }
        // `user:pa/ss@host`, `user:pa?ss@host`: a raw `/` or `?` in the password. Taken
        // for what it means (and never echoed) rather than split there.
        let (userinfo, rest) = match raw_userinfo_end(rest) {
            Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
            None => (None, rest),
        };
        let (before_query, query) = match rest.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match before_query.find('/') {
            Some(i) => before_query.split_at(i),
            None => (before_query, ""),
        };
        let (userinfo, hosts) = match (userinfo, authority.rfind('@')) {
            (Some(ui), _) => (Some(ui), authority),
            (None, Some(i)) => (Some(&authority[..i]), &authority[i + 1..]),
            (None, None) => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(ui) => match ui.split_once(':') {
                Some((u, p)) => (Some(decode(u)), Some(decode(p))),
                None => (Some(decode(ui)), None),
            },
        };
        let options =
            query.map(|q| url::form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default();
        Ok(StoreUrl {
            raw: url.to_owned(),
            scheme: scheme.to_ascii_lowercase(),
            user,
            password,
            hosts: hosts.to_owned(),
            path: decode(path),
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
        let rest = self.raw.split_once("://").map_or("", |(_, r)| r);
        let before_query = rest.split_once('?').map_or(rest, |(b, _)| b);
        let (authority, path) = before_query.find('/').map_or((before_query, ""), |i| before_query.split_at(i));
        let userinfo = authority.rfind('@').map_or("", |i| &authority[..=i]);
        let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(options).finish();
        let query = if query.is_empty() { query } else { format!("?{query}") };
        StoreUrl::parse(&format!("{scheme}://{userinfo}{host}{path}{query}"))
    }
}

fn decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Best-effort redaction of a string that failed to parse: hides whatever sits between
/// the last `:` and the `@` of the authority, and the value of every query option named
/// `…password` (`redis+sentinel://…?sentinel_password=`).
fn redact_raw(s: &str) -> String {
    let shown = redact_authority(s);
    let Some((head, query)) = shown.split_once('?') else { return shown };
    let query: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if decode(k).to_ascii_lowercase().ends_with("password") => format!("{k}=***"),
            _ => kv.to_owned(),
        })
        .collect();
    format!("{head}?{}", query.join("&"))
}

/// Where the user info ends (its `@`) when the password holds a raw `/` or `?`: the text
/// before the first `/` or `?` is `user:x` with no `@`, where `x` is no port (not all
/// digits) and no host list (no `,`), and an `@` follows.
fn raw_userinfo_end(rest: &str) -> Option<usize> {
    let sep = rest.find(['/', '?'])?;
    let (user, pass) = rest[..sep].split_once(':')?;
    if user.is_empty() || rest[..sep].contains('@') || pass.contains(',') || pass.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest[sep..].find('@').map(|i| sep + i)
}

fn redact_authority(s: &str) -> String {
    let (head, rest) = match s.split_once("://") {
        Some((h, r)) => (format!("{h}://"), r),
        None => (String::new(), s),
    };
    if let Some(at) = raw_userinfo_end(rest) {
        let user = rest[..at].split_once(':').map_or("", |(u, _)| u);
        return format!("{head}{user}:***@{}", &rest[at + 1..]);
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (auth, tail) = rest.split_at(end);
    match auth.rfind('@') {
        Some(at) => {
            let ui = &auth[..at];
            let user = ui.split_once(':').map(|(u, _)| format!("{u}:***")).unwrap_or(ui.to_owned());
            format!("{head}{user}@{}{tail}", &auth[at + 1..])
        }
        None => format!("{head}{rest}"),
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_raw(&self.raw))
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
        assert_eq!(e.kind(), crate::ErrorKind::InvalidUrl);
    }

    #[test]
    fn unknown_options_are_errors() {
        let u = StoreUrl::parse("memory://?ttl=3s&bogus=1").unwrap();
        let e = u.check_options(&["ttl"]).unwrap_err();
        assert!(e.message().contains("bogus"), "{e}");
    }
}
