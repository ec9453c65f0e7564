# shellcheck shell=bash
# Redisson's RLock (Maven Central org.redisson:redisson), watchdog lease, against baton's
# default layout (Redisson's: fair-lock queue check, fencing token). baton's sides: the Rust
# CLI, and the JVM binding dev.baton:baton in its own JVM — `kotlin` (suspending API, 64
# coroutines) and `java` (blocking Java surface, 64 threads, as Redisson's side).
PEER_LABEL="Redisson 3.52 RLock"
PEER_STORE=redis
PEER_BATON_QUERY=""
PEER_BATON_SIDES="rust kotlin java"
peer_pkgs() { command -v javac >/dev/null || echo openjdk-17-jdk-headless; command -v mvn >/dev/null || echo maven; }
peer_build() {
    mvn -q -B -f "$BP_ROOT/benches/peers/peers.d/java/pom.xml" -Dbp.out="$BP_OUT/java" \
        package dependency:copy-dependencies
    # The binding as users get it: the shipped release profile (LTO), installed in ~/.m2.
    local version
    version=$(workspace_version)
    mvn -q -B -ntp -f "$BP_ROOT/bindings-kotlin/pom.xml" -DskipTests \
        -Dcargo.triple="$(host_triple)" install
    mvn -q -B -f "$BP_ROOT/benches/peers/peers.d/kotlin/pom.xml" -Dbp.out="$BP_OUT/kotlin" \
        -Dbaton.version="$version" package dependency:copy-dependencies
}
peer_run() {   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
    java -cp "$BP_OUT/java/classes:$BP_OUT/java/dependency/*" PeersRedisson "$1" \
        "$(awk "BEGIN{print int($2*1000)}")" "$3" "$4" 2>/dev/null
}
baton_run() {   # SIDE URL SECONDS ITERATIONS HANDOFF_MAX
    local mode
    case $1 in kotlin) mode=coroutines ;; java) mode=threads ;; *) echo "no baton side '$1' here" >&2; return 2 ;; esac
    java -cp "$BP_OUT/kotlin/classes:$BP_OUT/kotlin/dependency/*" PeersBatonKt "$2" \
        "$(awk "BEGIN{print int($3*1000)}")" "$4" "$5" "$mode" 2>/dev/null
}
