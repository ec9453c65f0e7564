# shellcheck shell=bash
# `scripts/package python [--target TRIPLE…|--all-targets]`: the Python package as users
# install it — one abi3 wheel (CPython ≥ 3.9, one file for every version) of the
# distribution `baton-lock` (the import name is `baton`) per target of PACKAGE_TARGETS
# (scripts/package: --target, default this machine's), built by maturin into
# target/dist/baton_lock-VERSION-cp39-abi3-PLATFORM.whl. A wheel holds the compiled
# extension: installing it needs no Rust.
#
# Release wheels are linked by zig (`maturin build --zig`; zig and cargo-zigbuild from PyPI:
# ensure_cross_toolchain, scripts/lib/targets.sh) for the platform tag of the target table:
# glibc targets for glibc 2.17 (`--compatibility manylinux2014`: manylinux_2_17_*), musl
# targets for musllinux_1_2, macOS for its deployment target. Every Linux wheel is checked
# with `auditwheel show` (from PyPI, in target/py-tools): the tag it finds must be the
# wheel's. BATON_PACKAGE_BUILD=test builds the host's wheel as scripts/test does, without zig
# (the dev profile on the test build's compiled dependencies: CC and the linker must stay
# the test build's), so that wheel is tagged for this machine's glibc and not audited; the
# release build (the default) is the one to check the tags of.
#
#   BATON_PYTHON   the interpreter maturin's own venv is made from (default: python3, ≥ 3.9)

PACKAGE_TAKES_TARGETS+=(python)

# python_wheel_check TRIPLE WHEEL: the wheel's platform tag is the target's, and, on Linux,
# `auditwheel show` finds the same one (no symbol newer than the tag allows).
python_wheel_check() {
    local triple=$1 whl=$2 want tags found tools
    want=$(target_field "$triple" wheel)
    tags=$(basename "$whl" .whl)
    tags=${tags##*-}   # manylinux_2_17_x86_64.manylinux2014_x86_64
    [[ ".$tags." == *".$want."* ]] || die "$(basename "$whl"): platform tag $tags, not $want ($triple)"
    [[ $(target_field "$triple" os) == linux ]] || { log "   tag $tags ($triple)"; return 0; }
    tools=$(py_tools_dir)
    "$tools/bin/auditwheel" --version >/dev/null 2>&1 || ensure_py_tools auditwheel
    local out
    out=$("$tools/bin/auditwheel" show "$whl" 2>&1) || die "auditwheel show $(basename "$whl") failed: $out"
    # "… is consistent with the following platform tag: "manylinux_2_17_x86_64"." (wrapped)
    found=$(tr '\n' ' ' <<<"$out" | sed -n 's/.*consistent with the following platform tag: *"\([^"]*\)".*/\1/p')
    [[ -n $found ]] || die "auditwheel show $(basename "$whl"): no platform tag in its answer: $out"
    [[ ".$tags." == *".$found."* ]] || die "auditwheel show $(basename "$whl") says $found, not the wheel's $tags: $out"
    log "   auditwheel show: consistent with $found"
}

package_python() {
    local tools host triple
    tools=$(py_tools_dir)
    ensure_py_tools   # maturin, in the range pyproject.toml asks for
    host=$(host_triple)
    local -a targets
    read -ra targets <<<"${PACKAGE_TARGETS:-$host}"
    rm -f "$DIST"/baton_lock-*.whl
    for triple in "${targets[@]}"; do
        local t0=$SECONDS out="$ROOT/target/py-wheels/$BATON_PACKAGE_BUILD/$triple"
        rm -rf "$out"
        # maturin picks the abi3 tag from pyo3's `abi3-py39` feature (bindings-python/Cargo.toml).
        local -a build=(--release) link=()
        [[ $BATON_PACKAGE_BUILD == test ]] && build=(--features workspace-features)
        if [[ $BATON_PACKAGE_BUILD == test && $triple == "$host" ]]; then
            link=(--interpreter "$tools/bin/python")
        else
            ensure_cross_toolchain "$triple"
            link=(--zig --target "$triple")
            case $triple in
                *-linux-gnu) link+=(--compatibility manylinux2014) ;;
                *-linux-musl) link+=(--compatibility musllinux_1_2) ;;
            esac
            [[ $triple == "$host" ]] && link+=(--interpreter "$tools/bin/python")
        fi
        local min
        min=$(target_field "$triple" macos_min)
        env ${min:+MACOSX_DEPLOYMENT_TARGET="$min"} timeout 3600 "$tools/bin/maturin" build "${build[@]}" "${link[@]}" \
            --manifest-path "$ROOT/bindings-python/Cargo.toml" --out "$out" \
            || die "maturin build for $triple failed"
        local whl
        whl=$(ls "$out"/baton_lock-*-cp39-abi3-*.whl 2>/dev/null) || die "maturin left no baton_lock-*-cp39-abi3 wheel in $out"
        [[ $whl != *$'\n'* ]] || die "more than one wheel in $out: $whl"
        if [[ $BATON_PACKAGE_BUILD == test && $triple == "$host" ]]; then
            log "   test build: tagged for this machine, not audited (the release build is: scripts/package python)"
        else
            python_wheel_check "$triple" "$whl"
        fi
        cp "$whl" "$DIST/"
        log "   $(basename "$whl") ($(du -h "$whl" | cut -f1)) in $(( SECONDS - t0 ))s"
    done
}
