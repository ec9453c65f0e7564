# shellcheck shell=bash
# node-redlock 4.2, Redlock over the 5 nodes, against baton's redlock:// (simple layout per node).
# shellcheck source=node-redlock.sh
. "$(dirname "${BASH_SOURCE[0]}")/node-redlock.sh"
PEER_LABEL="node-redlock 4.2, Redlock ×5"
PEER_STORE=redlock
PEER_BATON_SIDES="rust"
