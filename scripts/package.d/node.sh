# shellcheck shell=bash
# `scripts/package node`: the Node package as users install it — the npm tarball of
# `baton-lock` (`npm pack` of bindings-node/) with the prebuilt native addon
# (native/baton.linux-x64-gnu.node) and the compiled TypeScript facade inside, into
# target/dist/baton-lock-VERSION.tgz. Installing it needs no Rust: `npm install <tarball>`.
#
#   BATON_NODE_SKIP_BUILD=1   pack what bindings-node/ already holds (a suite that just built it)

package_node() {
    local dir="$ROOT/bindings-node"
    command -v node >/dev/null || die "node not found: install Node.js ≥ 20 (with npm)"
    command -v npm >/dev/null || die "npm not found: install npm"
    if [[ -z ${BATON_NODE_SKIP_BUILD:-} ]]; then
        timeout 600 npm --prefix "$dir" install --no-audit --no-fund
        if [[ $BATON_PACKAGE_BUILD == test ]]; then
            timeout 3600 npm --prefix "$dir" run build:native:test
            timeout 600 npm --prefix "$dir" run build:ts
        else
            timeout 3600 npm --prefix "$dir" run build
        fi
    fi
    rm -f "$DIST"/baton-lock-*.tgz
    # `prepack` (scripts/check-built.mjs) refuses to pack without the addon and dist/.
    local tgz
    tgz=$(cd "$dir" && timeout 300 npm pack --silent --pack-destination "$DIST" | tail -n 1)
    [[ -f $DIST/$tgz ]] || die "npm pack left no tarball in $DIST"
    tar tzf "$DIST/$tgz" | grep '^package/native/.*\.node$' >/dev/null \
        || die "$tgz holds no native addon (package/native/*.node)"
    log "   $tgz ($(du -h "$DIST/$tgz" | cut -f1))"
}
