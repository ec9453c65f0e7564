# shellcheck shell=bash
# The behaviour suite × every store of this build, the CLI's process tests, the kit's and
# the bindings' pure-Rust tests, doctests (README.md's Rust samples included). The test
# binaries are built once (by the build suite when it ran first: then cargo finds nothing
# to do), then run in groups side by side (scripts/lib/test-groups.sh).

# shellcheck source-path=SCRIPTDIR source=../lib/test-groups.sh
. "$ROOT/scripts/lib/test-groups.sh"

suite_rust() {
    ensure_toolchain
    # libfaketime: the CLI's SQLite test steps a process's wall clock, redis_clock_step.rs
    # a redis-server's.
    ensure_apt_packages faketime
    local -a args; mapfile -t args < <(test_build_args)
    local list="$ROOT/target/test-binaries.tsv"
    timed "cargo test --no-run (the test binaries, built)" list_test_binaries "$list" "${args[@]}"
    timed "test binaries ($(wc -l <"$list") in ${#TEST_GROUPS[@]} parallel groups)" run_test_groups "$list"
    step "doctests" 20m cargo test "${args[@]}" --doc
}
