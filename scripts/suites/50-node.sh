# shellcheck shell=bash
# The Node binding (bindings-node/, npm package `baton-lock`): npm install, napi build + tsc,
# the `node --test` suite (behaviour × store URLs, cross-process and cross-thread
# exclusion, event-loop liveness, errors, README sample, typings), then the tarball of
# `scripts/package node` (target/dist/baton-lock-VERSION.tgz) and an install of it (and of
# the folder) into an empty directory.
#
# Extra store URLs for the behaviour and exclusion tests: BATON_TEST_URLS (space-separated:
# cluster URLs hold commas), and BATON_TEST_VARIANT_URLS for the round of every primitive
# (test/variants.test.ts); default: the BATON_TEST_*_URL of the services suite that this
# build can reach, split by BATON_TEST_VARIANTS (scripts/store-urls.mjs).

# The cdylib only loads inside Node: this suite tests it there (the lint suite lints it).
RUST_EXCLUDE+=(baton-node)

suite_node() {
    ensure_toolchain
    command -v node >/dev/null || die "node not found: install Node.js ≥ 20 (with npm)"
    command -v npm >/dev/null || die "npm not found: install npm"
    local dir="$ROOT/bindings-node"
    step "npm install (bindings-node)" 10m npm --prefix "$dir" install --no-audit --no-fund
    # The test build of the addon (dev profile, on the rust suite's compiled dependencies).
    step "napi build (test build)" 45m npm --prefix "$dir" run build:native:test
    step "tsc" 10m npm --prefix "$dir" run build:ts
    # Every server store of the services suite that this build reaches (see store-urls.mjs):
    # the variants of BATON_TEST_VARIANTS apart.
    if [[ -z ${BATON_TEST_URLS:-} ]]; then
        BATON_TEST_URLS=$(cd "$dir" && timeout 120 node scripts/store-urls.mjs main) || die "listing the test stores failed"
        BATON_TEST_VARIANT_URLS=$(cd "$dir" && timeout 120 node scripts/store-urls.mjs variants) \
            || die "listing the test stores failed"
        export BATON_TEST_URLS BATON_TEST_VARIANT_URLS
    fi
    log "   node stores beyond memory:// and sqlite://: ${BATON_TEST_URLS:-none}"
    log "   their variants (a round of every primitive): ${BATON_TEST_VARIANT_URLS:-none}"
    step "node --test (bindings-node)" 30m npm --prefix "$dir" test
    step "npm tarball (scripts/package node)" 10m env BATON_NODE_SKIP_BUILD=1 "$ROOT/scripts/package" node
    BATON_NODE_PACKED=1   # the xlang suite installs this tarball as it is
    step "tarball + folder installed into an empty folder" 10m bash "$dir/scripts/pack-smoke.sh" \
        "$(ls "$ROOT"/target/dist/baton-lock-*.tgz)"
}
