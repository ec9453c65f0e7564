# shellcheck shell=bash
# The Python package, as a user gets it: the abi3 wheel `baton-lock` that
# `scripts/package python` builds (maturin) into target/dist/ — here its test build (the
# extension in the dev profile on the rust suite's compiled dependencies; scripts/test),
# installed into a fresh venv, then the pytest suite over every store URL of the
# environment (memory:// and sqlite:// always; BATON_TEST_*_URL from the services suite
# when it ran first), `mypy --strict` on the typing sample, and stubtest on the
# hand-written stubs.
#
#   BATON_PYTHON   the interpreter to build the venv from (default: python3, ≥ 3.9)

ensure_python() {
    local py=${BATON_PYTHON:-python3}
    command -v "$py" >/dev/null || ensure_apt_packages python3
    "$py" -c 'import sys; sys.exit(sys.version_info < (3, 9))' \
        || die "$py is $("$py" --version 2>&1); the Python package needs CPython ≥ 3.9"
    "$py" -c 'import ensurepip, venv' 2>/dev/null || ensure_apt_packages python3-venv
}

suite_python() {
    ensure_toolchain
    ensure_python
    local py=${BATON_PYTHON:-python3} venv="$ROOT/target/py-venv"
    local vpy="$venv/bin/python"
    # mypy's cache stays under target/, not in the working tree.
    local -a in_venv=(env MYPY_CACHE_DIR="$ROOT/target/py-mypy-cache" PIP_DISABLE_PIP_VERSION_CHECK=1)

    step "python venv (fresh)" 5m "$py" -m venv --clear "$venv"
    step "pip install pytest pytest-xdist mypy" 10m "${in_venv[@]}" "$vpy" -m pip install -q pytest 'pytest-xdist>=3.6,<4' mypy
    step "wheel (scripts/package python, test build)" 60m env BATON_PACKAGE_BUILD=test "$ROOT/scripts/package" python
    BATON_PYTHON_PACKED=1   # the xlang suite installs this wheel as it is
    step "pip install the wheel" 10m "${in_venv[@]}" "$vpy" -m pip install "$ROOT"/target/dist/baton_lock-*.whl
    step "mypy --strict (typing sample)" 10m "${in_venv[@]}" "$vpy" -m mypy --strict \
        "$ROOT/bindings-python/tests/typing_check.py"
    step "stubtest baton._baton" 10m "${in_venv[@]}" "$vpy" -m mypy.stubtest baton._baton
    # Any non-zero exit fails the step, including pytest's 5 ("no tests collected").
    # Three workers: the tests mostly wait on servers and timers (one worker keeps about
    # half a core busy), so three take about half the time of one on 2 cores.
    step "pytest bindings-python (3 workers)" 30m "${in_venv[@]}" "$vpy" -m pytest -p no:cacheprovider -n 3 \
        -o faulthandler_timeout=120 "$ROOT/bindings-python/tests"
}
