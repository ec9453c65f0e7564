# shellcheck shell=bash
# Reusable helpers for baton's scripts (scripts/services, scripts/test, …).
# Source it; it defines functions only and changes no shell options.
#
#   log MSG…                      progress line on stderr
#   warn MSG… / die MSG…          warning / error (die exits 1)
#   wait_until SECONDS DESC CMD…  re-run CMD until it succeeds; bounded in time and count
#   ensure_apt_packages PKG…      apt-get install only the missing packages (update at most once)
#   as_root CMD…                  run CMD as root (directly, or via sudo when not root)
#   workspace_version             the Cargo workspace's version, which every package carries
#   host_triple                   rustc's host triple (cargo builds here name it: one target dir)
#   cargo_target_dir              cargo's target directory (cargo metadata: CARGO_TARGET_DIR,
#                                 build.target-dir of .cargo/config.toml, or the workspace's target/)
#   test_build_dir                the test build's output: <target dir>/<host triple>/debug

[[ -n ${_BATON_COMMON_SH:-} ]] && return 0
_BATON_COMMON_SH=1

: "${BATON_LOG_TAG:=baton}"

log()  { printf '[%s] %s\n' "$BATON_LOG_TAG" "$*" >&2; }
warn() { printf '[%s] warning: %s\n' "$BATON_LOG_TAG" "$*" >&2; }
die()  { printf '[%s] error: %s\n' "$BATON_LOG_TAG" "$*" >&2; exit 1; }

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"
    elif command -v sudo >/dev/null; then sudo -n "$@"
    else die "need root for: $*"; fi
}

workspace_version() { sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1; }
host_triple() { rustc -vV | sed -n 's/^host: //p'; }
# Where cargo builds, whatever set it (absolute; cargo metadata reads no dependency).
cargo_target_dir() {
    local dir
    dir=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps --offline 2>/dev/null \
        | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    [[ -n $dir ]] || die "cargo metadata gave no target_directory (in $ROOT)"
    echo "$dir"
}
test_build_dir() { echo "$(cargo_target_dir)/$(host_triple)/debug"; }

# wait_until SECONDS DESCRIPTION CMD [ARGS…]
# Runs CMD (a command or shell function, output discarded) every 0.2 s until it
# succeeds. Gives up after SECONDS of wall time *and* at most SECONDS*5+1 tries,
# so a CMD that itself hangs cannot make this loop forever: CMD should bound
# its own duration (e.g. `timeout 5 …`). Returns 0 on success, 1 on timeout.
_now_us() { local t=${EPOCHREALTIME:-}; [[ -n $t ]] && echo "${t/[.,]/}" || echo "$(date +%s)000000"; }
wait_until() {
    local secs=$1 desc=$2; shift 2
    local deadline=$(( $(_now_us) + secs * 1000000 )) tries=$(( secs * 5 + 1 )) i
    for (( i = 0; i < tries; i++ )); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        (( $(_now_us) >= deadline )) && break
        sleep 0.2
    done
    warn "timed out after ${secs}s waiting for: $desc"
    return 1
}

# ensure_apt_packages PKG…
# Installs only the packages that are not installed yet. `apt-get update` runs at
# most once per process (and per sourcing shell). Output goes to a log file
# (BATON_APT_LOG, default /tmp/baton-apt.log); one summary line is printed.
# Safe without a terminal: noninteractive debconf, stdin from /dev/null, and the
# existing config files are kept on upgrades.
ensure_apt_packages() {
    local pkg missing=() logf=${BATON_APT_LOG:-/tmp/baton-apt.log}
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$pkg")
    done
    (( ${#missing[@]} )) || return 0
    command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get"
    local t0=$SECONDS
    # Bounded: apt's own network timeouts, plus a hard cap; waits ≤120 s for a dpkg
    # lock held by a parallel job instead of failing at once.
    local -a env=(timeout "${BATON_APT_TIMEOUT:-900}" env DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a)
    local -a opts=(-q -y -o DPkg::Lock::Timeout=120
                   -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
    if [[ -z ${_BATON_APT_UPDATED:-} ]]; then
        if ! as_root "${env[@]}" apt-get "${opts[@]}" update </dev/null >>"$logf" 2>&1; then
            tail -n 20 "$logf" >&2; die "apt-get update failed (log: $logf)"
        fi
        _BATON_APT_UPDATED=1
    fi
    if ! as_root "${env[@]}" apt-get "${opts[@]}" install --no-install-recommends "${missing[@]}" \
            </dev/null >>"$logf" 2>&1; then
        tail -n 20 "$logf" >&2; die "apt-get install ${missing[*]} failed (log: $logf)"
    fi
    log "apt: installed ${missing[*]} in $(( SECONDS - t0 ))s (log: $logf)"
}
