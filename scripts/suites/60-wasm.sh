# shellcheck shell=bash
# The wasm packages (wasm/, crate baton-wasm): `scripts/package wasm` builds wasm/pkg and
# wasm/pkg-node (installing the wasm32 target, wasm-bindgen-cli and TypeScript if missing),
# then in headless Chromium (Debian's chromium + chromium-driver): the core's browser tests
# (wasm-bindgen-test, memory:// and the services' etcd through its JSON gateway), the
# JavaScript API from a plain page, wasm/README.md's browser sample, the demo page (screenshot:
# target/wasm-demo.png), locks shared with the native CLI over etcd+http:// both ways, and
# the Node package on the Node quick start (wasm/test/run.mjs).

# Built for wasm32 and tested in a browser here (natively it is only glue).
RUST_EXCLUDE+=(baton-wasm)

suite_wasm() {
    ensure_toolchain
    ensure_apt_packages chromium chromium-driver
    command -v node >/dev/null || die "node not found: install Node.js ≥ 20 (with npm)"
    if [[ -z ${BATON_TEST_ETCD_HTTP_URL:-} ]]; then
        # shellcheck disable=SC1091
        . "${BATON_SERVICES_DIR:-/tmp/baton-services}/services.env" 2>/dev/null || true
    fi
    [[ -n ${BATON_TEST_ETCD_HTTP_URL:-} ]] || die "BATON_TEST_ETCD_HTTP_URL unset: run the services suite first"
    export BATON_TEST_ETCD_HTTP_URL
    if in_lane ahead wasm; then lane_wait ahead; else ahead_wasm; fi
    step "wasm-bindgen-test in headless Chromium" 20m env CHROMEDRIVER=/usr/bin/chromedriver \
        WASM_BINDGEN_TEST_TIMEOUT=300 "${WASM_CARGO[@]}" test -p baton-wasm --target wasm32-unknown-unknown
    test_build_cli   # for the cross-runtime test
    step "browser pages, demo, cross-runtime, Node package" 10m env BATON_BIN="$TEST_BUILD_DIR/baton" \
        node "$ROOT/wasm/test/run.mjs"
}

# scripts/test names the host target for every build; these name their own.
WASM_CARGO=(env -u CARGO_BUILD_TARGET cargo)

# The builds need no server: with the rust suite in the run, they run in the background
# from the end of that suite on (scripts/test, "the ahead lane").
ahead_wasm() {   # the packages, clippy for wasm32, the browser tests' build
    step "scripts/package wasm" 20m env -u CARGO_BUILD_TARGET "$ROOT/scripts/package" wasm
    step "cargo clippy (wasm32: the core with etcd-http)" 15m "${WASM_CARGO[@]}" clippy -p baton --lib \
        --no-default-features --features etcd-http --target wasm32-unknown-unknown -- -D warnings
    step "cargo clippy (wasm32: baton-wasm)" 15m "${WASM_CARGO[@]}" clippy \
        -p baton-wasm --target wasm32-unknown-unknown --all-targets -- -D warnings
    step "cargo test --no-run (wasm32: the browser tests)" 15m "${WASM_CARGO[@]}" test --no-run \
        -p baton-wasm --target wasm32-unknown-unknown
}
