//! TLS of `postgres://` and `mysql://`, under the names the databases' own clients use
//! (libpq's `sslmode`, `sslrootcert`; the mysql client's `ssl-mode`, `ssl-ca`): checked
//! here once, for every scheme, and handed on to sqlx, whose URL parser reads the same
//! names. Absent, the driver's default is the clients' own: `prefer` / `PREFERRED`.

use crate::error::{Error, Result};
use crate::url::StoreUrl;

/// One database's TLS options.
struct Names {
    mode: &'static str,
    /// The modes, as the client spells them.
    modes: &'static [&'static str],
    /// libpq compares modes exactly; the mysql client ignores case.
    any_case: bool,
    ca: &'static str,
}

const POSTGRES: Names = Names {
    mode: "sslmode",
    modes: &["disable", "allow", "prefer", "require", "verify-ca", "verify-full"],
    any_case: false,
    ca: "sslrootcert",
};
const MYSQL: Names = Names {
    mode: "ssl-mode",
    modes: &["DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"],
    any_case: true,
    ca: "ssl-ca",
};

fn names(scheme: &str) -> Option<&'static Names> {
    match scheme {
        "postgres" | "postgresql" => Some(&POSTGRES),
        "mysql" => Some(&MYSQL),
        _ => None,
    }
}

/// The TLS option names of a URL scheme (none for `sqlite://`).
pub(crate) fn options(scheme: &str) -> Vec<&'static str> {
    names(scheme).map_or_else(Vec::new, |n| vec![n.mode, n.ca])
}

/// The TLS options of `url`, checked, as the driver reads them. The CA file must hold a
/// PEM certificate now: a typo'd path fails here, naming it, not at the first handshake.
pub(crate) fn driver_options(url: &StoreUrl) -> Result<Vec<(&'static str, String)>> {
    let Some(n) = names(url.scheme()) else { return Ok(Vec::new()) };
    // sqlx's `verify-ca` / `VERIFY_CA` verifier takes the process's default provider, and
    // rustls panics when a build has two (ring, and aws-lc-rs through reqwest) and none
    // was chosen: ring, as `rediss://`, once per process, unless the application chose.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut out = Vec::new();
    if let Some(v) = url.option(n.mode) {
        let mode = n.modes.iter().find(|m| if n.any_case { m.eq_ignore_ascii_case(v) } else { **m == v });
        let mode = mode.ok_or_else(|| {
            Error::invalid_url(format!("option `{}` of {url}: `{v}` is not one of {}", n.mode, n.modes.join(", ")))
        })?;
        out.push((n.mode, (*mode).to_owned()));
    }
    if let Some(path) = url.option(n.ca) {
        url.pem_file(n.ca).map_err(Error::invalid_url)?;
        out.push((n.ca, path.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn opts(url: &str) -> Result<Vec<(&'static str, String)>> {
        driver_options(&StoreUrl::parse(url)?)
    }

    #[test]
    fn modes_as_the_clients_spell_them() {
        assert_eq!(opts("postgres://h/db?sslmode=verify-full").unwrap(), [("sslmode", "verify-full".to_owned())]);
        assert_eq!(
            opts("mysql://h/db?ssl-mode=verify_identity").unwrap(),
            [("ssl-mode", "VERIFY_IDENTITY".to_owned())]
        );
        for bad in
            ["postgres://h/db?sslmode=verify_full", "postgres://h/db?sslmode=Require", "mysql://h/db?ssl-mode=on"]
        {
            let e = opts(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{e}");
            assert!(e.message().contains("is not one of"), "{e}");
        }
        assert!(opts("sqlite:///tmp/x.db?sslmode=require").unwrap().is_empty());
    }

    #[test]
    fn the_ca_file_is_read_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        let missing = dir.path().join("nope.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").unwrap();
        let url = format!("postgres://u:secret@h/db?sslmode=verify-ca&sslrootcert={}", ca.display());
        assert_eq!(opts(&url).unwrap()[1], ("sslrootcert", ca.display().to_string()));
        // A CA beside a mode that does not verify is allowed, as libpq allows it.
        assert!(opts(&format!("mysql://h/db?ssl-mode=REQUIRED&ssl-ca={}", ca.display())).is_ok());
        for url in [
            format!("postgres://u:secret@h/db?sslrootcert={}", missing.display()),
            format!("mysql://u:secret@h/db?ssl-mode=VERIFY_CA&ssl-ca={}", missing.display()),
            format!("mysql://u:secret@h/db?ssl-ca={}", dir.path().display()),
            "mysql://u:secret@h/db?ssl-ca=".to_owned(),
        ] {
            let e = opts(&url).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{e}");
            assert!(!e.message().contains("secret"), "{e}");
        }
        let e = opts(&format!("postgres://u:secret@h/db?sslrootcert={}", missing.display())).unwrap_err();
        assert!(e.message().contains("nope.pem") && e.message().contains("sslrootcert"), "{e}");
    }
}
