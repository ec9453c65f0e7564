# shellcheck shell=bash
# Real Apache Curator (curator-recipes 5.9.0 from Maven Central) against baton on one
# ZooKeeper: the JVM harness in tests/curator/ (built here with Maven) takes and releases
# InterProcessMutex, InterProcessReadWriteLock and InterProcessSemaphoreV2 while baton
# contends on the same names, both ways (core/tests/zk/curator.rs, run with --ignored:
# the rust suite builds that binary but cannot run it without the harness).

suite_curator() {
    ensure_toolchain
    command -v mvn >/dev/null || ensure_apt_packages maven
    command -v javac >/dev/null || ensure_apt_packages default-jdk-headless
    # The standalone ZooKeeper (already up when the services suite ran: then a no-op).
    step "services start zookeeper" 10m "$ROOT/scripts/services" start zookeeper
    # shellcheck disable=SC1091
    . "${BATON_SERVICES_DIR:-/tmp/baton-services}/services.env"
    step "mvn: build the Curator harness" 15m mvn -q -B -Dstyle.color=never -f "$ROOT/tests/curator/pom.xml" \
        compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
    # The rust suite's own build (same workspace, exclusions and features): nothing is
    # rebuilt after it.
    local -a ex; mapfile -t ex < <(exclude_args)
    step "Curator ⇄ baton (zk curator::)" 20m cargo test --workspace "${ex[@]}" --all-features --test zk -- --ignored curator::
}
