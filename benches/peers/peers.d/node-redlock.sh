# shellcheck shell=bash
# node-redlock 4.2 over ioredis (npm), one node, against baton's Rust core and Node binding,
# simple layout.
PEER_LABEL="node-redlock 4.2"
PEER_STORE=redis
PEER_BATON_QUERY="scheme=simple"
PEER_BATON_SIDES="rust node"
peer_pkgs() { command -v node >/dev/null || echo nodejs npm; }
peer_build() {
    mkdir -p "$BP_OUT/node"
    cp "$BP_ROOT/benches/peers/peers.d/node/package.json" "$BP_OUT/node/package.json"
    npm --prefix "$BP_OUT/node" install --no-audit --no-fund --silent
}
peer_run() {   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
    node "$BP_ROOT/benches/peers/peers.d/node/peers_node.mjs" --side node-redlock --modules "$BP_OUT/node" \
        --target "$1" --duration-ms "$(awk "BEGIN{print int($2*1000)}")" --iterations "$3" --handoff-max "$4"
}
