//! Which store a command talks to: `--url`, else `$BATON_URL`, else the embedded SQLite
//! file in the user's data directory (so every process of this user on this machine meets
//! on the same store without any set-up).

use std::path::PathBuf;

use crate::exit::{Failure, IOERR};

/// Where the URL came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Flag,
    Env,
    Default,
}

/// The store URL a command uses.
#[derive(Debug, Clone)]
pub(crate) struct StoreChoice {
    pub(crate) url: String,
    pub(crate) source: Source,
}

impl StoreChoice {
    /// Resolves `--url` / `$BATON_URL` / the default; creates the default's directory.
    pub(crate) fn resolve(flag: Option<&str>) -> Result<StoreChoice, Failure> {
        if let Some(url) = flag {
            return Ok(StoreChoice { url: url.to_owned(), source: Source::Flag });
        }
        // An empty BATON_URL counts as unset, as shells make "unset" and "empty" easy to confuse.
        if let Some(url) = std::env::var("BATON_URL").ok().filter(|u| !u.trim().is_empty()) {
            return Ok(StoreChoice { url, source: Source::Env });
        }
        Ok(StoreChoice { url: default_url()?, source: Source::Default })
    }

    /// The URL with any password hidden (for messages).
    pub(crate) fn shown(&self) -> String {
        baton::StoreUrl::parse(&self.url).map_or_else(|_| "(an unparsable URL)".to_owned(), |u| u.to_string())
    }

    /// The URL scheme, lower-cased, if the URL parses.
    pub(crate) fn scheme(&self) -> Option<String> {
        baton::StoreUrl::parse(&self.url).ok().map(|u| u.scheme().to_owned())
    }

    /// Tells on stderr which store is used when the user did not choose it explicitly
    /// (`loud`), or always with `--verbose`.
    pub(crate) fn announce(&self, loud: bool, verbose: bool) {
        match self.source {
            Source::Default if loud || verbose => {
                crate::output::say!("baton: using {} (set BATON_URL or --url to change)", self.shown());
            }
            Source::Env if verbose => crate::output::say!("baton: using {} (from BATON_URL)", self.shown()),
            Source::Flag if verbose => crate::output::say!("baton: using {}", self.shown()),
            _ => {}
        }
    }
}

fn default_url() -> Result<String, Failure> {
    let base = dirs::data_dir().filter(|d| d.is_absolute()).unwrap_or_else(std::env::temp_dir);
    let dir: PathBuf = base.join("baton");
    std::fs::create_dir_all(&dir).map_err(|e| {
        Failure::new(IOERR, format!("cannot create the data directory {}: {e} (set BATON_URL or --url)", dir.display()))
    })?;
    let path = dir.join("baton.db");
    let path = path.to_str().ok_or_else(|| {
        Failure::new(IOERR, format!("the data directory {} is not valid UTF-8; set BATON_URL or --url", dir.display()))
    })?;
    Ok(format!("sqlite://{}", escape_path(path)))
}

/// Escapes the characters a store URL path cannot carry literally (the query and option
/// separators, and `%` itself).
fn escape_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3F"),
            '&' => out.push_str("%26"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_paths_survive_the_round_trip() {
        for p in ["/home/a b/x.db", "/tmp/50%/x.db", "/tmp/what?/a&b#c+d/x.db"] {
            let url = format!("sqlite://{}", escape_path(p));
            let parsed = baton::StoreUrl::parse(&url).unwrap();
            assert_eq!(parsed.path(), p, "{url}");
            assert!(parsed.options().is_empty(), "{url}");
        }
    }
}
