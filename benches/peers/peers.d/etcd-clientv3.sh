# shellcheck shell=bash
# etcd clientv3's concurrency.Mutex (Go module go.etcd.io/etcd/client/v3), against etcd://.
# shellcheck source=go/peer.sh
. "$(dirname "${BASH_SOURCE[0]}")/go/peer.sh"
PEER_LABEL="etcd clientv3 3.7 Mutex"
PEER_STORE=etcd
PEER_BATON_SIDES="rust"
peer_run() { peer_go_run etcd "$@"; }   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
