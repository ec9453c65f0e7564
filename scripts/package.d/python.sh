# shellcheck shell=bash
# `scripts/package python`: the Python package as users install it — one abi3 wheel
# (CPython ≥ 3.9, one file for every version) of the distribution `baton-lock` (the import
# name is `baton`), built by maturin into target/dist/baton_lock-VERSION-cp39-abi3-*.whl.
# The wheel holds the compiled extension: installing it needs no Rust.
#
#   BATON_PYTHON   the interpreter maturin's own venv is made from (default: python3, ≥ 3.9)

package_python() {
    local py=${BATON_PYTHON:-python3} tools="$ROOT/target/py-tools"
    command -v "$py" >/dev/null || ensure_apt_packages python3
    "$py" -c 'import ensurepip, venv' 2>/dev/null || ensure_apt_packages python3-venv
    # maturin in a venv of its own under target/ (the same range pyproject.toml asks for).
    if ! "$tools/bin/maturin" --version >/dev/null 2>&1; then
        timeout 300 "$py" -m venv --clear "$tools"
        PIP_DISABLE_PIP_VERSION_CHECK=1 timeout 600 "$tools/bin/python" -m pip install -q 'maturin>=1.9,<2.0'
    fi
    rm -f "$DIST"/baton_lock-*.whl
    # maturin picks the abi3 tag from pyo3's `abi3-py39` feature (bindings-python/Cargo.toml).
    local -a build=(--release)
    [[ $BATON_PACKAGE_BUILD == test ]] && build=(--features workspace-features)
    timeout 3600 "$tools/bin/maturin" build "${build[@]}" --interpreter "$tools/bin/python" \
        --manifest-path "$ROOT/bindings-python/Cargo.toml" --out "$DIST"
    local whl
    whl=$(ls "$DIST"/baton_lock-*-cp39-abi3-*.whl 2>/dev/null) || die "maturin left no baton_lock-*-cp39-abi3 wheel in $DIST"
    log "   $(basename "$whl") ($(du -h "$whl" | cut -f1))"
}
