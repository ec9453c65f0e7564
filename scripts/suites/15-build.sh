# shellcheck shell=bash
# Every test binary of the workspace, built once in the test build (scripts/test, "one
# build"); the rust suite runs them. It comes before the services suite, which waits for
# the servers started in the background: the build (about 3 minutes cold on 2 cores)
# overlaps their installation and start instead of following it.

suite_build() {
    ensure_toolchain
    # scripts/lib/test-groups.sh (sourced by the rust suite's file)
    build_test_binaries "cargo test --no-run (every test binary, once)"
}
