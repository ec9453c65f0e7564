//! `redlock://` URL options, parsed once into a typed `RedlockConfig`.

use std::collections::HashSet;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::url::COMMON_OPTIONS;
use crate::url::StoreUrl;

/// Options of `redlock://` itself.
const OPTIONS: &[&str] = &["retry_count", "retry_delay", "retry_jitter", "node_timeout", "drift_factor"];
/// Options handed to every node's `redis://` store.
const NODE_OPTIONS: &[&str] = &["timeout", "connect_timeout", "names", "scheme", "free"];
const DEFAULT_RETRY_COUNT: u32 = 3;
const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(50);
const DEFAULT_RETRY_JITTER: Duration = Duration::from_millis(50);
const DEFAULT_DRIFT_FACTOR: f64 = 0.01;
/// The node timeout of a step without a lease (release, inspect, subscribe) unless
/// `?node_timeout=` says otherwise.
pub(super) const STEP_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a token write-back may take on a node that answered after the quorum (in the
/// background, and waited for by `close`): longer than one step, for a loaded host.
pub(super) const BEHIND_TIMEOUT: Duration = Duration::from_secs(5);

/// What a `redlock://` URL asks for. Its `Debug` shows URLs redacted only.
#[derive(Debug, Clone)]
pub(crate) struct RedlockConfig {
    /// `Redlock <url>`, password redacted: the prefix of the store's own messages.
    pub(crate) store: String,
    /// Each node's address as written (for messages) and its `redis://` URL: the
    /// credentials and path of the `redlock://` URL, the node options as its query.
    pub(crate) nodes: Vec<(String, StoreUrl)>,
    /// Rounds tried again after a split or an unreachable quorum.
    pub(crate) retry_count: u32,
    /// The pause before a retry …
    pub(crate) retry_delay: Duration,
    /// … plus up to this much at random.
    pub(crate) retry_jitter: Duration,
    /// `?node_timeout=`: how long one node may take with one step (`None`: by lease).
    pub(crate) node_timeout: Option<Duration>,
    /// The clock drift allowed, as a fraction of the lease.
    pub(crate) drift_factor: f64,
}

impl RedlockConfig {
    pub(crate) fn from_url(url: &StoreUrl) -> Result<RedlockConfig> {
        url.check_options(&[COMMON_OPTIONS, OPTIONS, NODE_OPTIONS].concat())?;
        let hosts = url.host_list();
        if hosts.is_empty() {
            return Err(Error::invalid_url(format!(
                "{url} names no node: redlock://host1:port1,host2:port2,host3:port3 (an odd number of independent \
                 Redis masters, 5 in the usual setup)"
            )));
        }
        let mut seen = HashSet::new();
        if let Some(twice) = hosts.iter().find(|h| !seen.insert(h.to_ascii_lowercase())) {
            return Err(Error::invalid_url(format!(
                "{url} names the node `{twice}` twice: each node counts once toward the quorum"
            )));
        }
        let retry_count = match url.option("retry_count") {
            None => DEFAULT_RETRY_COUNT,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|n| *n <= 1000)
                .ok_or_else(|| bad_option(url, "retry_count", "a whole number from 0 to 1000", v))?,
        };
        let retry_delay = duration_option(url, "retry_delay", DEFAULT_RETRY_DELAY, true)?;
        let retry_jitter = duration_option(url, "retry_jitter", DEFAULT_RETRY_JITTER, true)?;
        let node_timeout = url
            .option("node_timeout")
            .map(|_| duration_option(url, "node_timeout", STEP_TIMEOUT, false))
            .transpose()?;
        let drift_factor = match url.option("drift_factor") {
            None => DEFAULT_DRIFT_FACTOR,
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && (0.0..0.5).contains(f))
                .ok_or_else(|| bad_option(url, "drift_factor", "a number from 0 up to (not including) 0.5", v))?,
        };
        let node_options: Vec<(String, String)> =
            url.options().iter().filter(|(k, _)| NODE_OPTIONS.contains(&k.as_str())).cloned().collect();
        let nodes = hosts
            .iter()
            .map(|h| Ok(((*h).to_owned(), url.with_host("redis", h, &node_options)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(RedlockConfig {
            store: format!("Redlock {url}"),
            nodes,
            retry_count,
            retry_delay,
            retry_jitter,
            node_timeout,
            drift_factor,
        })
    }
}

fn bad_option(url: &StoreUrl, name: &str, want: &str, got: &str) -> Error {
    Error::invalid_argument(format!("option `{name}` of {url} must be {want}, not `{got}`"))
}

/// A duration option of at most an hour; `0` (any unit) too when `zero_ok`.
fn duration_option(url: &StoreUrl, name: &str, default: Duration, zero_ok: bool) -> Result<Duration> {
    let Some(v) = url.option(name) else { return Ok(default) };
    let want =
        if zero_ok { "a duration from 0 to 1h (such as 50ms)" } else { "a duration above 0, up to 1h (such as 50ms)" };
    // `duration::parse` refuses 0 (no timeout or lease may be zero); a pause may.
    let t = v.trim();
    let (num, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len()));
    let zero = num.trim().parse::<f64>() == Ok(0.0) && matches!(unit, "" | "ms" | "s" | "m" | "min" | "h");
    match crate::duration::parse(v) {
        _ if zero && zero_ok => Ok(Duration::ZERO),
        Ok(d) if d <= Duration::from_secs(3600) => Ok(d),
        _ => Err(bad_option(url, name, want, v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn parse(url: &str) -> Result<RedlockConfig> {
        RedlockConfig::from_url(&StoreUrl::parse(url)?)
    }

    #[test]
    fn defaults_and_node_urls() {
        let c = parse("redlock://u:secret@a:1,b:2/3?scheme=simple&retry_count=0&prefix=p").unwrap();
        assert_eq!((c.retry_count, c.retry_delay, c.node_timeout), (0, DEFAULT_RETRY_DELAY, None));
        assert_eq!(c.nodes.len(), 2);
        assert_eq!(c.nodes[1].0, "b:2");
        assert_eq!(c.nodes[1].1.password(), Some("secret"));
        assert_eq!((c.nodes[1].1.path(), c.nodes[1].1.options()), ("/3", &[("scheme".into(), "simple".into())][..]));
        assert!(!format!("{c:?}").contains("secret"));
    }

    #[test]
    fn bad_values_name_the_option_never_the_password() {
        let e = parse("redlock://u:secret@a:1?retry_delay=2h").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("`retry_delay`") && !e.message().contains("secret"), "{}", e.message());
        assert_eq!(parse("redlock://a:1?retry_jitter=0s").unwrap().retry_jitter, Duration::ZERO);
        assert!(parse("redlock://a:1?node_timeout=0").is_err());
        assert!(parse("redlock://a:1?drift_factor=0.5").is_err());
        assert_eq!(parse("redlock://a:1?bogus=1").unwrap_err().kind(), ErrorKind::InvalidUrl);
    }
}
