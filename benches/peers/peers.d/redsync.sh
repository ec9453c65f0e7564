# shellcheck shell=bash
# redsync v4 over go-redis v9 (Go modules), one node, against baton's simple layout.
# shellcheck source=go/peer.sh
. "$(dirname "${BASH_SOURCE[0]}")/go/peer.sh"
PEER_LABEL="redsync 4.18"
PEER_STORE=redis
PEER_BATON_QUERY="scheme=simple"
PEER_BATON_SIDES="rust"
peer_run() { peer_go_run redsync "$@"; }   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
