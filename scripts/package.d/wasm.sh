# shellcheck shell=bash
# scripts/package wasm — the WebAssembly packages of the `wasm/` crate:
#
#   wasm/pkg/       for browsers: baton_wasm.js (an ES module; `import init, { connect }`),
#                   baton_wasm.d.ts, baton_wasm_bg.wasm, the facade and the wasm-bindgen
#                   glue (`--target web`) it loads
#   wasm/pkg-node/  for Node ≥ 20: the same facade over `--target nodejs`
#
# Both carry the Node package's TypeScript facade (bindings-node/ts) compiled over the wasm
# module instead of the napi addon (wasm/js/native.ts). Copies of both go to $DIST.
# Installs what is missing: the rustup target, wasm-bindgen-cli at the crate's exact
# wasm-bindgen version (the CLI must equal it), TypeScript (npm, wasm/package-lock.json).

wasm_bindgen_version() {   # the wasm-bindgen version Cargo.lock pins for the crate
    sed -n '/^name = "wasm-bindgen"$/{n;s/^version = "\(.*\)"$/\1/p;q}' "$ROOT/Cargo.lock"
}

ensure_wasm_tools() {
    command -v rustup >/dev/null || die "rustup not found: the wasm32 target comes from rustup"
    # grep reads the whole list: -q would end the pipe early and fail it (pipefail, SIGPIPE).
    rustup target list --installed | grep -x wasm32-unknown-unknown >/dev/null \
        || rustup target add wasm32-unknown-unknown
    local want have
    want=$(wasm_bindgen_version)
    [[ -n $want ]] || die "no wasm-bindgen in Cargo.lock"
    have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}') || true   # none yet: install it
    if [[ $have != "$want" ]]; then
        log "   installing wasm-bindgen-cli $want (found: ${have:-none}; takes ~1 min)"
        # Not --locked: the CLI's lockfile can name crate versions a registry mirror lacks.
        # --debug: it builds in half the time (59 s against 2 min on 2 cores) and writes the
        # same bytes (checked on baton_wasm.wasm), in about a second instead of 0.3 s.
        cargo install wasm-bindgen-cli --version "$want" --debug --quiet
    fi
    command -v node >/dev/null || die "node not found: install Node.js ≥ 20 (with npm)"
    [[ -x $ROOT/wasm/node_modules/.bin/tsc ]] \
        || npm --prefix "$ROOT/wasm" ci --no-audit --no-fund --loglevel=error
}

# wasm_glue TARGET OUT: wasm-bindgen's glue for TARGET (web | nodejs) into OUT, the JS
# renamed baton_wasm_core.* (baton_wasm.js is the facade's entry; the .wasm keeps its name).
# WASM_OUT: the module cargo built, under cargo's target directory (package_wasm sets it).
wasm_glue() {
    local target=$1 out=$2 wasm=$WASM_OUT
    rm -rf "$out" && mkdir -p "$out"
    # --weak-refs: a guard object the page drops is freed by the GC, so the core releases it.
    wasm-bindgen --target "$target" --weak-refs --out-name baton_wasm --out-dir "$out" "$wasm"
    local ext=js; [[ $target == nodejs ]] && ext=cjs
    mv "$out/baton_wasm.js" "$out/baton_wasm_core.$ext"
    mv "$out/baton_wasm.d.ts" "$out/baton_wasm_core.d.ts"
}

# wasm_facade OUT: bindings-node/ts with wasm/js/native.ts in place of the addon's, compiled
# to ES modules in OUT/facade (its `../core.js` is OUT's; types from OUT's glue).
wasm_facade() {
    local out=$1 src="$ROOT/target/wasm-facade"
    rm -rf "$src" && mkdir -p "$src/ts"
    cp "$ROOT"/bindings-node/ts/*.ts "$src/ts/"
    cp "$ROOT/wasm/js/native.ts" "$src/ts/native.ts"
    cp "$ROOT/wasm/js/core.d.ts" "$out/baton_wasm_core.d.ts" "$src/"
    cp "$ROOT/wasm/js/tsconfig.json" "$src/"
    "$ROOT/wasm/node_modules/.bin/tsc" -p "$src/tsconfig.json" --rootDir "$src/ts" --outDir "$out/facade"
    cp "$ROOT/wasm/js/core.d.ts" "$out/"
}

package_wasm() {
    ensure_wasm_tools
    local t0=$SECONDS
    cargo build -p baton-wasm --release --target wasm32-unknown-unknown
    log "   cargo build (wasm32, release) in $(( SECONDS - t0 ))s"
    # Where cargo put it: CARGO_TARGET_DIR or a config's target-dir move it out of target/.
    WASM_OUT="$(cargo_target_dir)/wasm32-unknown-unknown/release/baton_wasm.wasm"
    [[ -f $WASM_OUT ]] || die "cargo built no $WASM_OUT"
    local web="$ROOT/wasm/pkg" node="$ROOT/wasm/pkg-node" js="$ROOT/wasm/js"
    wasm_glue web "$web"
    wasm_facade "$web"
    cp "$js"/web/baton_wasm.js "$js"/web/baton_wasm.d.ts "$js"/web/core.js "$js"/web/package.json "$web/"
    wasm_glue nodejs "$node"
    cp -r "$web/facade" "$web/core.d.ts" "$node/"
    cp "$js/web/baton_wasm.js" "$node/index.js"
    cp "$js/web/baton_wasm.d.ts" "$node/index.d.ts"
    cp "$js"/node/core.js "$js"/node/package.json "$node/"
    # What npm shows for both packages.
    cp "$ROOT/wasm/README.md" "$web/README.md"
    cp "$ROOT/wasm/README.md" "$node/README.md"
    rm -rf "$DIST/wasm" "$DIST/wasm-node"
    cp -r "$web" "$DIST/wasm"
    cp -r "$node" "$DIST/wasm-node"
    local size gz
    size=$(stat -c %s "$web/baton_wasm_bg.wasm")
    gz=$(gzip -9 -c "$web/baton_wasm_bg.wasm" | wc -c)
    log "   baton_wasm_bg.wasm: $size bytes, $gz gzipped"
}
