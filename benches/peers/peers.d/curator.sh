# shellcheck shell=bash
# Apache Curator's InterProcessMutex (Maven Central org.apache.curator:curator-recipes) on
# ZooKeeper, against baton's zk:// store (Curator's lock layout, one session). Curator's
# client takes baton's default session timeout (30 s), so both sides ask the server alike.
PEER_LABEL="Curator 5.9 InterProcessMutex"
PEER_STORE=zk
PEER_BATON_QUERY=""
PEER_BATON_SIDES="rust"
peer_pkgs() {
    echo zookeeper
    command -v javac >/dev/null || echo openjdk-17-jdk-headless
    command -v mvn >/dev/null || echo maven
}
peer_build() {
    mvn -q -B -f "$BP_ROOT/benches/peers/peers.d/java/curator/pom.xml" -Dbp.out="$BP_OUT/java-curator" \
        package dependency:copy-dependencies
}
# stderr kept (slf4j-nop keeps the clients quiet): a failure's message reaches rounds.jsonl.
peer_run() {   # ENDPOINTS SECONDS ITERATIONS HANDOFF_MAX
    java -cp "$BP_OUT/java-curator/classes:$BP_OUT/java-curator/dependency/*" PeersCurator "$1" \
        "$(awk "BEGIN{print int($2*1000)}")" "$3" "$4"
}
