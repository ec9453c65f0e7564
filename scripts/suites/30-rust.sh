# shellcheck shell=bash
# The behaviour suite × every store of this build, the CLI's process tests, the kit's and
# the bindings' pure-Rust tests, doctests (README.md's Rust samples included). The test
# binaries are built once (by the build suite when it ran first: then cargo finds nothing
# to do), then run in groups side by side (scripts/lib/test-groups.sh), with the tests lane
# (scripts/test: the other suites' CPU work that needs no server) beside them; the ahead lane
# starts as the suite ends.

# shellcheck source-path=SCRIPTDIR source=../lib/test-groups.sh
. "$ROOT/scripts/lib/test-groups.sh"

suite_rust() {
    ensure_toolchain
    # libfaketime: the CLI's SQLite test steps a process's wall clock, core/tests/redis/clock_step.rs
    # a redis-server's.
    ensure_apt_packages faketime
    build_test_binaries "cargo test --no-run (the test binaries, built)"
    lane_start tests idle
    timed "test binaries ($(wc -l <"$TEST_BINARIES") in ${#TEST_GROUPS[@]} groups: solo after the others)" run_test_groups "$TEST_BINARIES"
    lane_wait tests
    local -a args; mapfile -t args < <(test_build_args)
    step "doctests" 20m cargo test "${args[@]}" --doc
    lane_start ahead ahead
}
