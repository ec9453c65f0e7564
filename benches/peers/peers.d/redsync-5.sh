# shellcheck shell=bash
# redsync v4, Redlock over the 5 nodes, against baton's redlock:// (simple layout per node).
# shellcheck source=redsync.sh
. "$(dirname "${BASH_SOURCE[0]}")/redsync.sh"
PEER_LABEL="redsync 4.18, Redlock ×5"
PEER_STORE=redlock
