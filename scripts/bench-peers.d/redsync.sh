# shellcheck shell=bash
# redsync v4 over go-redis v9 (Go modules), one node, against baton's simple layout.
PEER_LABEL="redsync 4.18"
PEER_STORE=redis
PEER_BATON_QUERY="scheme=simple"
PEER_BATON_SIDES="rust"
peer_pkgs() { command -v go >/dev/null || echo golang-go; }
peer_build() { (cd "$BP_ROOT/scripts/bench-peers.d/go" && go build -o "$BP_OUT/peers-go" .); }
peer_run() {   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
    "$BP_OUT/peers-go" -peer redsync -endpoints "$1" -d "${2}s" -n "$3" -handoff-max "$4"
}
