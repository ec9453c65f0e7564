# shellcheck shell=bash
# Real servers on loopback, started and checked the way every backend suite uses them;
# exports BATON_TEST_*_URL for the suites after this one.
suite_services() {
    step "services start" 20m "$ROOT/scripts/services" start
    step "services status" 2m "$ROOT/scripts/services" status
    # shellcheck disable=SC1091
    . "${BATON_SERVICES_DIR:-/tmp/baton-services}/services.env"
    [[ -n ${BATON_TEST_REDIS_URL:-} && -n ${BATON_TEST_ETCD_URL:-} ]] || die "services.env is incomplete"
}
