# shellcheck shell=bash
# `scripts/package cli [--target TRIPLE…|--all-targets]`: the `baton` command as users
# download it — one archive per target of the platform matrix (scripts/lib/targets.sh):
#
#   target/dist/baton-VERSION-TRIPLE.tar.gz   (Linux, macOS)
#   target/dist/baton-VERSION-TRIPLE.zip      (Windows: baton.exe)
#
# each holding a directory baton-VERSION-TRIPLE/ with the binary, README.md (cli/README.md) and the LICENSE
# files the checkout has; then target/dist/SHA256SUMS over every file in target/dist/.
#
# Built with `cargo zigbuild` (zig from PyPI's `ziglang` as C compiler and linker, installed
# by ensure_cross_toolchain into target/py-tools) for every target, the host's included:
# the glibc targets link against glibc 2.17 (TRIPLE.2.17), so one binary runs on every
# distribution since 2014; musl targets are static; macOS links zig's libSystem stubs only.
# The profile is the release profile (thin LTO, one codegen unit) unless the environment
# overrides it (scripts/test's CARGO_PROFILE_RELEASE_* for test builds). Default target:
# this machine's.

PACKAGE_TAKES_TARGETS+=(cli)

# cli_archive_name TRIPLE: the archive's file name.
cli_archive_name() { echo "baton-$(workspace_version)-$1$(target_field "$1" ext)"; }

# cli_build TRIPLE: builds baton for TRIPLE; prints the binary's path.
# BATON_PACKAGE_BUILD=test: the dev profile, with baton-workspace-hack in the same build
# so the dependencies get the features the bindings' test builds give them (one compile of
# the dependency tree per target for the CLI, the wheel, the addon and the JVM library).
cli_build() {
    local triple=$1 t0=$SECONDS dir bin profile=release
    ensure_cross_toolchain "$triple"
    local -a args=(-p baton-cli --bin baton --release --locked)
    if [[ $BATON_PACKAGE_BUILD == test ]]; then
        args=(-p baton-cli -p baton-workspace-hack --locked) profile=debug
    fi
    log "   cargo zigbuild ${args[*]} --target $(target_field "$triple" zig)"
    cargo_zigbuild "$triple" "${args[@]}" >&2 || die "cargo zigbuild for $triple failed"
    dir=$(cargo_target_dir)
    bin="$dir/$triple/$profile/baton$(target_field "$triple" exe)"
    [[ -f $bin ]] || die "the build for $triple left no $bin"
    log "   built $triple in $(( SECONDS - t0 ))s ($(du -h "$bin" | cut -f1) binary)"
    echo "$bin"
}

# cli_archive TRIPLE BINARY: writes the archive into $DIST; prints its path.
cli_archive() {
    local triple=$1 bin=$2 name stage f ext out
    name="baton-$(workspace_version)-$triple"
    ext=$(target_field "$triple" ext)
    stage="$ROOT/target/cli-stage"
    rm -rf "${stage:?}/$name" && mkdir -p "$stage/$name"
    cp "$bin" "$stage/$name/"
    # The CLI's own page (the root README speaks of cargo and scripts/test).
    cp "$ROOT/cli/README.md" "$stage/$name/README.md"
    for f in "$ROOT"/LICENSE*; do
        [[ -f $f ]] && cp "$f" "$stage/$name/"
    done
    out="$DIST/$name$ext"
    rm -f "$out"
    case $ext in
        .tar.gz)
            # Reproducible: sorted names, one mtime, no owner names.
            tar -C "$stage" --sort=name --mtime='@0' --owner=0 --group=0 --numeric-owner \
                -cf - "$name" | gzip -9 -n >"$out" ;;
        .zip)
            (cd "$stage" && python3 -m zipfile -c "$out" "$name") ;;
        *) die "unknown archive extension $ext" ;;
    esac
    rm -rf "${stage:?}/$name"
    echo "$out"
}

package_cli() {
    local -a triples
    read -r -a triples <<<"${PACKAGE_TARGETS:-}"
    (( ${#triples[@]} )) || triples=("$(host_triple)")
    local triple bin out t0
    for triple in "${triples[@]}"; do
        t0=$SECONDS
        bin=$(cli_build "$triple")
        out=$(cli_archive "$triple" "$bin")
        log "   $(basename "$out"): $(stat -c %s "$out") bytes ($(du -h "$out" | cut -f1)), $(( SECONDS - t0 ))s"
    done
    write_sha256sums "$DIST"
}
