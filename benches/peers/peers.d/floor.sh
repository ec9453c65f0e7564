# shellcheck shell=bash
# The floor: redis-benchmark (Debian redis-tools), one client, running the exact EVALSHA
# calls of a baton cycle of the simple and the default layout (captured with MONITOR),
# against `baton bench` on the same server. Built into benches/peers/lib/run.py.
PEER_LABEL="redis-benchmark, a layout's scripts"
PEER_STORE=redis
PEER_BUILTIN=1
peer_pkgs() { echo redis-tools; }
peer_build() { :; }
