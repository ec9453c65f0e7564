# shellcheck shell=bash
# `scripts/package node [--target TRIPLE…|--all-targets]`: the npm packages of `baton-lock`
# in napi-rs's per-platform layout, `npm pack`ed into target/dist/ by
# bindings-node/scripts/npm-dist.mjs:
#
#   baton-lock-VERSION.tgz            the main package: the compiled TypeScript facade, the
#                                     loader (native/native.js, platform.js) and the addon's
#                                     typings, no addon; its optionalDependencies are the
#                                     platform packages packed with it
#   baton-lock-PLATFORM-VERSION.tgz   @baton-lock/PLATFORM (napi's name: linux-x64-gnu,
#                                     linux-arm64-gnu, darwin-arm64, win32-x64-gnu…): the addon
#                                     baton.PLATFORM.node, with os/cpu/libc fields
#
# one platform package per target of PACKAGE_TARGETS (scripts/package: --target, default this
# machine's). Installing needs no Rust: `npm install` of the main tarball and the platform's
# (from a registry, npm picks the platform package itself).
#
# The addons: the host's is bindings-node/native/baton.PLATFORM.node, what `npm run build`
# makes (release: napi build -x, cargo-zigbuild linking against glibc 2.17 on a glibc
# target; BATON_PACKAGE_BUILD=test: build:native:test, the dev profile on the test build's
# dependencies). Every other target's is cross-built with cargo-zigbuild (zig from PyPI:
# ensure_cross_toolchain, scripts/lib/targets.sh) into <target dir>/npm-addons/.
#
#   BATON_NODE_SKIP_BUILD=1   pack what bindings-node/ already holds (a suite that just
#                             built it): the host's addon only

PACKAGE_TAKES_TARGETS+=(node)

# node_cross_addon TRIPLE OUT: the addon of TRIPLE (not the host) built with cargo-zigbuild
# and copied to OUT (a .node is the cdylib renamed).
node_cross_addon() {
    local triple=$1 out=$2 profile=release lib
    ensure_cross_toolchain "$triple"
    local -a args=(-p baton-node --manifest-path "$ROOT/Cargo.toml" --release)
    if [[ $BATON_PACKAGE_BUILD == test ]]; then
        args=(-p baton-node --manifest-path "$ROOT/Cargo.toml" --features workspace-features)
        profile=debug
    fi
    local t0=$SECONDS
    (
        # A musl addon links musl dynamically: Node's own libc (napi-rs does the same).
        [[ $triple == *-musl ]] && export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=-crt-static"
        cargo_zigbuild "$triple" "${args[@]}"
    ) || die "cargo zigbuild of baton-node for $triple failed"
    case $(target_field "$triple" os) in
        linux) lib=libbaton_node.so ;;
        macos) lib=libbaton_node.dylib ;;
        windows) lib=baton_node.dll ;;
    esac
    lib="$(cargo_target_dir)/$triple/$profile/$lib"
    [[ -f $lib ]] || die "cargo zigbuild left no $lib"
    mkdir -p "$(dirname "$out")"
    cp "$lib" "$out"
    log "   addon $triple ($profile) in $(( SECONDS - t0 ))s: $(file -b "$out" 2>/dev/null | cut -d, -f1-2)"
}

package_node() {
    local dir="$ROOT/bindings-node" host triple plat
    command -v node >/dev/null || die "node not found: install Node.js ≥ 20 (with npm)"
    command -v npm >/dev/null || die "npm not found: install npm"
    host=$(host_triple)
    local -a targets addons=()
    read -ra targets <<<"${PACKAGE_TARGETS:-$host}"
    local skip=${BATON_NODE_SKIP_BUILD:-} with_host=
    [[ " ${targets[*]} " == *" $host "* ]] && with_host=1
    if [[ -z $skip ]]; then
        timeout 600 npm --prefix "$dir" install --no-audit --no-fund
        if [[ -z $with_host ]]; then
            :   # the facade and typings below come from the host's build all the same
        elif [[ $BATON_PACKAGE_BUILD == test ]]; then
            timeout 3600 npm --prefix "$dir" run build:native:test
        else
            ensure_cross_toolchain "$host"
            local -a napi=(--release)
            [[ $(target_field "$host" os) == linux ]] && napi+=(-x --target "$(target_field "$host" zig)")
            timeout 3600 npm --prefix "$dir" run build:native:dev -- "${napi[@]}"
        fi
        if [[ ! -f $dir/native/native.d.ts ]]; then
            # No host addon asked for: the typings (napi writes them while it builds) from a host build.
            timeout 3600 npm --prefix "$dir" run build:native:test
        fi
        timeout 600 npm --prefix "$dir" run build:ts
    fi
    for triple in "${targets[@]}"; do
        plat=$(target_field "$triple" napi)
        if [[ $triple == "$host" ]]; then
            [[ -f $dir/native/baton.$plat.node ]] || die "no host addon bindings-node/native/baton.$plat.node: build it first"
            addons+=(--addon "$plat=$dir/native/baton.$plat.node")
        else
            [[ -z $skip ]] || die "BATON_NODE_SKIP_BUILD=1 packs the host's addon only, not $triple's"
            local out
            out="$(cargo_target_dir)/npm-addons/baton.$plat.node"
            node_cross_addon "$triple" "$out"
            addons+=(--addon "$plat=$out")
        fi
    done
    rm -f "$DIST"/baton-lock-*.tgz
    local -a tgzs
    mapfile -t tgzs < <(timeout 600 node "$dir/scripts/npm-dist.mjs" --out "$DIST" "${addons[@]}")
    (( ${#tgzs[@]} == ${#targets[@]} + 1 )) || die "npm-dist.mjs packed ${#tgzs[@]} tarballs, not ${#targets[@]} + 1"
    local t
    for t in "${tgzs[@]}"; do
        log "   $(basename "$t") ($(du -h "$t" | cut -f1))"
    done
}
