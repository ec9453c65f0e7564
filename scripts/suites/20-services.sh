# shellcheck shell=bash
# Real servers on loopback, started and checked the way every backend suite uses them;
# exports BATON_TEST_*_URL for the suites after this one. When scripts/test runs this
# suite after others, it starts the servers in the background first (services_prestart),
# so installing and starting them overlaps the lint suite.

services_prestart() {
    mkdir -p "$ROOT/target"
    SERVICES_LOG="$ROOT/target/services-start.log"
    SERVICES_T0=$SECONDS
    log "── services start (in the background: $SERVICES_LOG)"
    ( timeout --kill-after=30 20m "$ROOT/scripts/services" start >"$SERVICES_LOG" 2>&1 ) &
    SERVICES_PID=$!
}

suite_services() {
    if [[ -n ${SERVICES_PID:-} ]]; then
        local rc=0
        wait "$SERVICES_PID" || rc=$?
        cat "$SERVICES_LOG" >&2
        (( rc == 0 )) || die "services start failed (rc $rc) after $(( SECONDS - SERVICES_T0 ))s"
        log "   services start ok, $(( SECONDS - SERVICES_T0 ))s after it began"
        unset SERVICES_PID
    else
        step "services start" 20m "$ROOT/scripts/services" start
    fi
    step "services status" 2m "$ROOT/scripts/services" status
    # shellcheck disable=SC1091
    . "${BATON_SERVICES_DIR:-/tmp/baton-services}/services.env"
    [[ -n ${BATON_TEST_REDIS_URL:-} && -n ${BATON_TEST_ETCD_URL:-} ]] || die "services.env is incomplete"
}
