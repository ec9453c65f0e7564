# shellcheck shell=bash
# fmt and clippy over the Rust workspace; the unit tests of the scripts' Python helpers.
# With the rust suite in the run, clippy runs in its tests lane (scripts/test), beside the tests.

suite_lint() {
    ensure_toolchain
    command -v python3 >/dev/null || ensure_apt_packages python3
    step "python unittest scripts/lib" 2m python3 -m unittest discover -s "$ROOT/scripts/lib" -p 'test_*.py'
    # The peer benchmark's report (summary, SVG plots) on a recorded sample: a second or two.
    step "python unittest benches/peers/lib" 2m python3 -m unittest discover -s "$ROOT/benches/peers/lib" -p 'test_*.py'
    step "cargo fmt --check" 5m cargo fmt --all -- --check
    # The bindings' test builds compile only their own crates on the rust suite's build
    # (scripts/test, "one build"): their dependency features must be that build's.
    local -a args; mapfile -t args < <(test_build_args)
    step "bindings' test builds share the test build's dependencies" 5m \
        python3 "$ROOT/scripts/lib/workspace_features.py" baton-python baton-node baton-kotlin -- "${args[@]}"
    if in_lane idle lint; then
        log "   clippy: in the tests lane, beside the rust suite's tests"
    else
        idle_lint
    fi
}

idle_lint() {   # clippy: the whole workspace, the smallest build, each store feature alone
    # Every crate, the bindings' cdylibs too (their tests run in their own suites).
    step "cargo clippy -D warnings" 30m cargo clippy --workspace --all-targets --all-features -- -D warnings
    # The smallest build (memory:// only, what wasm will use) must compile cleanly too.
    step "cargo clippy (no default features)" 15m cargo clippy -p baton --no-default-features -- -D warnings
    # Each store feature alone (cargo-hack's --each-feature, without the extra tool).
    local f
    for f in sqlite postgres mysql redis redlock etcd etcd-http zookeeper; do
        step "cargo clippy (only $f)" 15m cargo clippy -p baton --no-default-features --features "$f" -- -D warnings
    done
}
