# shellcheck shell=bash
# Every test binary of the workspace, built once in the test build (scripts/test, "one
# build"); the rust suite runs them. It comes before the services suite, which waits for
# the servers started in the background: the build (about 3 minutes cold on 2 cores)
# overlaps their installation and start instead of following it.

suite_build() {
    ensure_toolchain
    local -a args; mapfile -t args < <(test_build_args)
    timed "cargo test --no-run (every test binary, once)" list_test_binaries "$ROOT/target/test-binaries.tsv" "${args[@]}"
}
