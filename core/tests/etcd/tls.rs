//! etcd over TLS with user/password auth: `etcds://` (gRPC) and `etcd+https://` (the JSON
//! gateway) against the `etcd-tls` member of `scripts/services` (a certificate signed by a
//! CA of its own, auth enabled; URLs with `?ca=` in `BATON_TEST_ETCDS_URL` and
//! `BATON_TEST_ETCD_HTTPS_URL`): the behaviour suite on gRPC, a check of each primitive on
//! the gateway (whose transport `etcd_http.rs` checks whole), and the failures a caller
//! must be told about — an untrusted certificate, a wrong password, `?ca=` misused.
#![cfg(all(feature = "etcd", feature = "etcd-http"))]

use baton::{Client, ErrorKind};
use baton_testkit::{behaviour, behaviour_suite};

fn grpc_url() -> String {
    behaviour::crash::server_url("BATON_TEST_ETCDS_URL")
}

fn https_url() -> String {
    behaviour::crash::server_url("BATON_TEST_ETCD_HTTPS_URL")
}

mod grpc {
    use crate::tls::behaviour::Store;

    pub(crate) fn store() -> Store {
        Store { url: crate::tls::grpc_url(), keep: None }
    }

    crate::tls::behaviour_suite!(crate::tls::grpc::store; except election);
}

mod https {
    use crate::tls::behaviour::Store;

    pub(crate) fn store() -> Store {
        Store { url: crate::tls::https_url(), keep: None }
    }

    // The gateway's transport is checked whole on plain HTTP (`etcd_http.rs`) and TLS whole
    // on gRPC (above): over TLS here, a check of each primitive's grant, wake-up, lease and
    // close, and of the password's redaction.
    crate::tls::behaviour_suite!(@tests crate::tls::https::store;
        lock::try_and_timeout, lock::release_wakes_waiter, lock::exclusion_counter, lock::ttl_expiry_is_lost,
        lock::watchdog_keeps_lock, lock::fencing_tokens_grow, lock::close_releases, rw::release_wakes_reader,
        semaphore::waiter_woken_and_dropped_permit_returns, permits::lease_expiry_and_update,
        latch::set_count_down_wait, fair::grants_in_request_order, multi::all_or_nothing,
        errors::passwords_never_in_messages,
    );
}

/// `url` with its `?ca=` option dropped (the system's roots, which lack the test CA).
fn without_ca(url: &str) -> String {
    url.split_once('?').map_or(url, |(base, _)| base).to_owned()
}

/// `url` with another password.
fn with_password(url: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (userinfo, host) = rest.split_once('@').expect("the TLS URLs carry credentials");
    let user = userinfo.split(':').next().unwrap();
    format!("{scheme}://{user}:{password}@{host}")
}

async fn refused(url: &str) -> baton::Error {
    let opened = tokio::time::timeout(std::time::Duration::from_secs(60), Client::connect(url)).await;
    match opened.expect("connect gave up within its own timeouts") {
        Ok(c) => {
            c.close().await;
            panic!("{url} connected");
        }
        Err(e) => e,
    }
}

#[tokio::test]
async fn untrusted_certificate_is_refused() {
    for url in [grpc_url(), https_url()] {
        let e = refused(&without_ca(&url)).await;
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        let msg = e.to_string();
        assert!(msg.contains("certificate") || msg.contains("UnknownIssuer"), "{msg}");
        assert!(!msg.contains("s3cret"), "{msg}");
    }
}

#[tokio::test]
async fn wrong_password_is_refused_without_showing_it() {
    for url in [grpc_url(), https_url()] {
        let url = with_password(&url, "not-the-pw-hunter2");
        let e = refused(&url).await;
        assert_ne!(e.kind(), ErrorKind::InvalidUrl, "{e}");
        let msg = e.to_string();
        assert!(msg.contains("127.0.0.1"), "{msg}");
        assert!(msg.contains("authentication failed"), "{msg}");
        assert!(!msg.contains("hunter2"), "a password in: {msg}");
    }
}

#[tokio::test]
async fn ca_option_is_checked() {
    let plain = behaviour::crash::server_url("BATON_TEST_ETCD_URL");
    let e = refused(&format!("{plain}?ca=/etc/hostname")).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("TLS connections only"), "{e}");
    let base = without_ca(&grpc_url());
    for (ca, says) in [("/nonexistent/ca.pem", "cannot read"), ("/etc/hostname", "no PEM certificate")] {
        let e = refused(&format!("{base}?ca={ca}")).await;
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
}
