# shellcheck shell=bash
# etcd clientv3's concurrency.Mutex (Go module go.etcd.io/etcd/client/v3), against etcd://.
PEER_LABEL="etcd clientv3 3.7 Mutex"
PEER_STORE=etcd
PEER_BATON_QUERY=""
PEER_BATON_SIDES="rust"
peer_pkgs() { command -v go >/dev/null || echo golang-go; }
peer_build() { (cd "$BP_ROOT/scripts/bench-peers.d/go" && go build -o "$BP_OUT/peers-go" .); }
peer_run() {   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
    "$BP_OUT/peers-go" -peer etcd -endpoints "$1" -d "${2}s" -n "$3" -handoff-max "$4"
}
