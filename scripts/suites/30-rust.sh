# shellcheck shell=bash
# The behaviour suite × every store of this build, the CLI's process tests, doctests
# (README.md's Rust samples included).
suite_rust() {
    ensure_toolchain
    local -a ex; mapfile -t ex < <(exclude_args)
    step "cargo test" 40m cargo test --workspace "${ex[@]}" --all-features --no-fail-fast
}
