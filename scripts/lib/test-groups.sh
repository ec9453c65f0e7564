# shellcheck shell=bash
# Runs the workspace's test binaries in groups that run side by side: the binaries that use
# one family of servers are in one group, so groups never contend on one server, and the
# binaries of a group run one after another. Test time is mostly waiting on servers and
# timers, so the groups overlap well even on 2 cores.
#
#   build_test_binaries LABEL            the test build's binaries (below), listed in TEST_BINARIES
#   list_test_binaries OUT CARGO_ARGS…   build every test binary (cargo test --no-run) and
#                                        write "manifest_dir<TAB>executable" lines to OUT
#   run_test_groups LIST                 run them; prints each group's output whole, then
#                                        one "N passed, N failed" line; non-zero on failure
#
# A binary belongs to the first group whose pattern matches its target name.
TEST_GROUPS=(
    # Run alone, after the others: sqlite_processes starts 300 processes contending on one
    # file (load ~270 on 2 cores for ~3 min), which would starve the timing checks of the
    # tests beside it (a lost lease's SIGKILL must land within the drift margin).
    "solo:sqlite_processes"
    # Two groups, each about half of the test time: core's test binaries are a folder per
    # store (core/Cargo.toml's [[test]]s); Redis's (redis, redis_link), ZooKeeper's and the
    # SQL stores' binaries with the lab's and the CLI's, then etcd's and the cross-store one
    # (stores: memory, faults, residue, tokens, fence, URLs) with the rest. Three groups took
    # 506-536 s side by side against 645 s for two, but under them redis_server's
    # sentinel_failover_keeps_working lost its replicated hold once (2026-11-29, not yet
    # understood); four groups once overloaded the 2 cores (load 14).
    "redis:redis|redis_link|zk|sql|lab|baton_lab*|cli"
    "rest:*"
)
# The servers a group's tests start themselves take ports from the group's own range
# (BATON_PORT_RANGE, read by baton_servers::free_loopback_port).
declare -A GROUP_PORTS=([redis]=10000-13999 [rest]=14000-19999)

TEST_BINARIES="$ROOT/target/test-binaries.tsv"
build_test_binaries() {   # build_test_binaries LABEL: the test build (test_build_args), listed in TEST_BINARIES
    local -a args; mapfile -t args < <(test_build_args)
    timed "$1" list_test_binaries "$TEST_BINARIES" "${args[@]}"
}

list_test_binaries() {
    local out=$1; shift
    # One JSON message per artifact; test harnesses carry "executable" and a profile with
    # "test":true (the CLI's own binary, built for its tests, carries "test":false). sed
    # keeps the tool needs at bash + coreutils (no jq on a fresh machine).
    timeout --kill-after=30 40m cargo test "$@" --no-run --message-format=json-render-diagnostics \
        | grep '"executable":"/' | grep '"test":true},"features"' \
        | sed -E 's/.*"manifest_path":"([^"]*)\/Cargo\.toml".*"executable":"([^"]*)".*/\1\t\2/' \
        | sort -u >"$out"
    [[ -s $out ]] || die "no test binaries were built"
}

_group_of() {   # _group_of TARGET_NAME → group name
    local name=$1 g pat
    local -a pats
    for g in "${TEST_GROUPS[@]}"; do
        IFS='|' read -ra pats <<<"${g#*:}"
        for pat in "${pats[@]}"; do
            # shellcheck disable=SC2053  # the pattern is meant to glob
            [[ $name == $pat ]] && { echo "${g%%:*}"; return; }
        done
    done
}

_run_group() {   # _run_group GROUP LIST LOG: the group's binaries, one after another
    local group=$1 list=$2 logf=$3 dir exe name rc=0
    while IFS=$'\t' read -r dir exe; do
        name=$(basename "$exe"); name=${name%-*}
        [[ $(_group_of "$name") == "$group" ]] || continue
        local t0=$SECONDS
        echo "── [$group] $name (${dir#"$ROOT"/})"
        # As cargo runs them: from the package's folder, with its manifest dir set.
        if ! (cd "$dir" && BATON_PORT_RANGE=${GROUP_PORTS[$group]:-} CARGO_MANIFEST_DIR=$dir timeout --kill-after=30 20m "$exe" </dev/null); then
            echo "── [$group] $name FAILED"
            rc=1
        fi
        echo "── [$group] $name done in $(( SECONDS - t0 ))s"
    done <"$list" >"$logf" 2>&1
    return $rc
}

run_test_groups() {
    local list=$1 g name logd; logd=$(mktemp -d "${TMPDIR:-/tmp}/baton-tests.XXXXXX")
    local -A pids=()
    for g in "${TEST_GROUPS[@]}"; do
        name=${g%%:*}
        [[ $name == solo ]] && continue
        _run_group "$name" "$list" "$logd/$name.log" &
        pids[$name]=$!
    done
    local failed=() t0=$SECONDS
    for g in "${TEST_GROUPS[@]}"; do
        name=${g%%:*}
        [[ $name == solo ]] && continue
        wait "${pids[$name]}" || failed+=("$name")
        log "   group $name finished (at $(( SECONDS - t0 ))s)"
    done
    # The solo group's binaries, with nothing beside them but the lanes' idle work.
    _run_group solo "$list" "$logd/solo.log" || failed+=(solo)
    log "   group solo finished (at $(( SECONDS - t0 ))s)"
    for g in "${TEST_GROUPS[@]}"; do cat "$logd/${g%%:*}.log"; done
    # Totals over every binary's "test result:" line.
    local passed=0 nfail=0 p f
    while read -r p f; do (( passed += p, nfail += f )); done < <(
        cat "$logd"/*.log | sed -nE 's/^test result: [A-Za-z]+\. ([0-9]+) passed; ([0-9]+) failed.*/\1 \2/p')
    rm -rf "$logd"
    echo "rust: $passed passed, $nfail failed"
    (( ${#failed[@]} == 0 && nfail == 0 )) || { warn "failing groups: ${failed[*]:-none}"; return 1; }
}
