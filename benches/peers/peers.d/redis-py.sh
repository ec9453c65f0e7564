# shellcheck shell=bash
# redis-py's Lock (PyPI `redis`), against baton's Rust core and Python binding, simple layout.
PEER_LABEL="redis-py 8.1 Lock"
PEER_STORE=redis
PEER_BATON_QUERY="scheme=simple"
PEER_BATON_SIDES="rust python"
peer_pkgs() { echo python3-venv; }
# The venv is shared with baton's Python side (benches/peers/bench-peers puts the wheel in it).
peer_build() { "$BP_OUT/venv/bin/pip" install -q redis==8.1.0; }
peer_run() {   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
    "$BP_OUT/venv/bin/python" "$BP_ROOT/benches/peers/peers.d/py/peers_py.py" --side redis-py \
        --url "redis://$1" --duration "$2" --iterations "$3" --handoff-max "$4"
}
