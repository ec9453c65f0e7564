# shellcheck shell=bash
# The platform matrix (issue 40): the one table of the targets baton's artefacts are built
# for, and the helpers every artefact's script uses to cross-build for them. Sourced by
# scripts/package (and so by scripts/package.d/*.sh) and scripts/test; needs lib/common.sh
# (log, die, ensure_apt_packages) and $ROOT. Defines functions only.
#
#   targets_all                    the Rust triples of the matrix, one a line
#   target_known TRIPLE            true when TRIPLE is one of them
#   target_field TRIPLE FIELD      a column of the table (below), or a derived one:
#       wheel       the wheel platform tag           manylinux_2_17_x86_64, musllinux_1_2_aarch64…
#       napi        the napi-rs platform name        linux-x64-gnu, darwin-arm64, win32-x64-gnu…
#       jna         JNA's resource dir               linux-x86-64, darwin-aarch64, win32-x86-64…
#       ext         the CLI archive's extension      .tar.gz, .zip (Windows)
#       exe         an executable's suffix           "" or .exe
#       zig         the --target cargo-zigbuild is given (glibc targets: TRIPLE.2.17)
#       macos_min   MACOSX_DEPLOYMENT_TARGET         10.12, 11.0 (empty elsewhere)
#       os, arch    linux|macos|windows, x86_64|aarch64
#   ensure_cross_toolchain TRIPLE  the rustup target, and zig + cargo-zigbuild from PyPI in
#                                  target/py-tools (PATH gets that venv's bin/)
#   cargo_target_dir               cargo's target directory (honours CARGO_TARGET_DIR and
#                                  .cargo/config.toml: read from `cargo metadata`)
#   cargo_zigbuild TRIPLE ARGS…    `cargo zigbuild ARGS… --target <zig field>` with the
#                                  target's environment (macOS deployment target)
#   write_sha256sums DIR           (re)writes DIR/SHA256SUMS over every file under DIR
#
# JNA and musl: JNA (5.x) names its resource dir by OS and architecture only
# (`Platform.RESOURCE_PREFIX`: linux-x86-64, linux-aarch64), with no word for the C library:
# on a musl system (Alpine) it looks in the same linux-* dir as on glibc. The jna column of
# the musl rows is therefore the glibc one; a jar can hold one library per dir, so a
# glibc-built library there must also load on musl (or the musl rows stay uncovered by the
# jar, as docs/platforms.md says).

[[ -n ${_BATON_TARGETS_SH:-} ]] && return 0
_BATON_TARGETS_SH=1

# triple                      wheel tag                 napi name         JNA dir         archive
_BATON_TARGET_TABLE='
x86_64-unknown-linux-gnu      manylinux_2_17_x86_64     linux-x64-gnu     linux-x86-64    .tar.gz
aarch64-unknown-linux-gnu     manylinux_2_17_aarch64    linux-arm64-gnu   linux-aarch64   .tar.gz
x86_64-unknown-linux-musl     musllinux_1_2_x86_64      linux-x64-musl    linux-x86-64    .tar.gz
aarch64-unknown-linux-musl    musllinux_1_2_aarch64     linux-arm64-musl  linux-aarch64   .tar.gz
x86_64-apple-darwin           macosx_10_12_x86_64       darwin-x64        darwin-x86-64   .tar.gz
aarch64-apple-darwin          macosx_11_0_arm64         darwin-arm64      darwin-aarch64  .tar.gz
x86_64-pc-windows-gnu         win_amd64                 win32-x64-gnu     win32-x86-64    .zip
'

# The oldest glibc the glibc targets are linked for (manylinux2014).
BATON_GLIBC_MIN=2.17

targets_all() { awk 'NF { print $1 }' <<<"$_BATON_TARGET_TABLE"; }

target_known() { targets_all | grep -qxF -- "$1"; }

target_field() {
    local triple=$1 field=$2 col
    target_known "$triple" || die "unknown target '$triple' (known: $(targets_all | paste -sd ' '))"
    case $field in
        wheel) col=2 ;; napi) col=3 ;; jna) col=4 ;; ext) col=5 ;;
        exe) [[ $triple == *-windows-* ]] && echo .exe || echo ""; return 0 ;;
        zig) [[ $triple == *-linux-gnu ]] && echo "$triple.$BATON_GLIBC_MIN" || echo "$triple"; return 0 ;;
        macos_min)
            case $triple in
                x86_64-apple-darwin) echo 10.12 ;; aarch64-apple-darwin) echo 11.0 ;; *) echo "" ;;
            esac
            return 0 ;;
        os)
            case $triple in
                *-linux-*) echo linux ;; *-apple-darwin) echo macos ;; *-windows-*) echo windows ;;
            esac
            return 0 ;;
        arch) echo "${triple%%-*}"; return 0 ;;
        *) die "target_field: unknown field '$field' (wheel napi jna ext exe zig macos_min os arch)" ;;
    esac
    awk -v t="$triple" -v c="$col" '$1 == t { print $c }' <<<"$_BATON_TARGET_TABLE"
}

# The venv of the build tools from PyPI (scripts/package.d/python.sh keeps maturin in it).
py_tools_dir() { echo "$ROOT/target/py-tools"; }

# ensure_py_tools PIP-SPEC…: installs the missing ones into target/py-tools (made if absent;
# never recreated here). maturin goes in too when missing, in the range python.sh asks for:
# python.sh recreates the venv (--clear) when it finds no maturin, which would drop zig.
ensure_py_tools() {
    local tools py=${BATON_PYTHON:-python3}
    tools=$(py_tools_dir)
    if [[ ! -x $tools/bin/python ]]; then
        command -v "$py" >/dev/null || ensure_apt_packages python3
        "$py" -c 'import ensurepip, venv' 2>/dev/null || ensure_apt_packages python3-venv
        timeout 300 "$py" -m venv "$tools"
    fi
    local -a want=("$@")
    "$tools/bin/maturin" --version >/dev/null 2>&1 || want+=('maturin>=1.9,<2.0')
    (( ${#want[@]} )) || return 0
    log "   pip: ${want[*]} into ${tools#"$ROOT"/}"
    PIP_DISABLE_PIP_VERSION_CHECK=1 timeout 600 "$tools/bin/python" -m pip install -q "${want[@]}" \
        || die "pip install ${want[*]} failed"
}

# ensure_cross_toolchain TRIPLE: everything a cross build for TRIPLE needs, from rustup and
# PyPI only: the target's std, zig (PyPI's `ziglang`: the zig binary in a wheel) as the C
# compiler and linker, cargo-zigbuild (PyPI's wheel of it) to drive it. Puts the venv's
# bin/ first on PATH, so `cargo zigbuild` and zig (`python3 -m ziglang`) are found.
ensure_cross_toolchain() {
    local triple=$1 tools
    target_known "$triple" || die "unknown target '$triple' (known: $(targets_all | paste -sd ' '))"
    command -v rustup >/dev/null || die "rustup not found: the targets' std comes from rustup (https://rustup.rs)"
    # grep reads the whole list: -q would end the pipe early and fail it (pipefail, SIGPIPE).
    rustup target list --installed | grep -xF -- "$triple" >/dev/null \
        || timeout 900 rustup target add "$triple" || die "rustup target add $triple failed"
    tools=$(py_tools_dir)
    local -a want=()
    "$tools/bin/python" -c 'import ziglang' 2>/dev/null || want+=(ziglang)
    "$tools/bin/cargo-zigbuild" --version >/dev/null 2>&1 || want+=(cargo-zigbuild)
    if (( ${#want[@]} )); then ensure_py_tools "${want[@]}"; fi
    case ":$PATH:" in *":$tools/bin:"*) ;; *) export PATH="$tools/bin:$PATH" ;; esac
}

# cargo_zigbuild TRIPLE CARGO-ARGS…: cargo zigbuild for TRIPLE (glibc targets for glibc
# BATON_GLIBC_MIN, macOS for its deployment target). Call ensure_cross_toolchain first.
cargo_zigbuild() {
    local triple=$1; shift
    local min; min=$(target_field "$triple" macos_min)
    local -a env=()
    [[ -n $min ]] && env=(MACOSX_DEPLOYMENT_TARGET="$min")
    env "${env[@]}" timeout "${BATON_BUILD_TIMEOUT:-3600}" cargo zigbuild "$@" --target "$(target_field "$triple" zig)"
}

cargo_target_dir() {
    cargo metadata --format-version 1 --no-deps --manifest-path "$ROOT/Cargo.toml" \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
}

# write_sha256sums DIR: DIR/SHA256SUMS, `sha256sum -c`-able from DIR, over every file
# under DIR (sub-directories' files by relative path), sorted by name.
write_sha256sums() {
    local dir=$1
    [[ -d $dir ]] || die "write_sha256sums: no directory $dir"
    (
        cd "$dir"
        find . -type f ! -path ./SHA256SUMS ! -path ./SHA256SUMS.tmp -printf '%P\n' | LC_ALL=C sort \
            | tr '\n' '\0' | xargs -0 -r sha256sum >SHA256SUMS.tmp
        mv SHA256SUMS.tmp SHA256SUMS
    )
    log "   SHA256SUMS: $(wc -l <"$dir/SHA256SUMS") files"
}
