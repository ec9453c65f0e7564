# shellcheck shell=bash
# Redisson's RLock (Maven Central org.redisson:redisson), watchdog lease, against baton's
# default layout (Redisson's: fair-lock queue check, fencing token).
PEER_LABEL="Redisson 3.52 RLock"
PEER_STORE=redis
PEER_BATON_QUERY=""
PEER_BATON_SIDES="rust"
peer_pkgs() { command -v javac >/dev/null || echo default-jdk-headless; command -v mvn >/dev/null || echo maven; }
peer_build() {
    mvn -q -B -f "$BP_ROOT/scripts/bench-peers.d/java/pom.xml" -Dbp.out="$BP_OUT/java" \
        package dependency:copy-dependencies
}
peer_run() {   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
    java -cp "$BP_OUT/java/classes:$BP_OUT/java/dependency/*" PeersRedisson "$1" \
        "$(awk "BEGIN{print int($2*1000)}")" "$3" "$4" 2>/dev/null
}
