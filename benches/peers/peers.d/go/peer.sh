# shellcheck shell=bash
# What the Go peers (redsync, etcd clientv3) share: one program, benches/peers/peers.d/go.
peer_pkgs() { command -v go >/dev/null || echo golang-go; }
peer_build() { (cd "$BP_ROOT/benches/peers/peers.d/go" && go build -o "$BP_OUT/peers-go" .); }
peer_go_run() {   # PEER ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
    "$BP_OUT/peers-go" -peer "$1" -endpoints "$2" -d "${3}s" -n "$4" -handoff-max "$5"
}
