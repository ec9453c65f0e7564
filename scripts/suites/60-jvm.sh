# shellcheck shell=bash
# The JVM artifact (bindings-kotlin/, Maven coordinates dev.baton:baton): JDK 17 and Maven
# from Debian if missing, then `mvn install` of bindings-kotlin/pom.xml — cargo build of the
# native library, uniffi-bindgen, Kotlin compile, the JUnit 5 suite
# (behaviour × memory/sqlite/redis/etcd, errors, cancellation, leaks, real Redisson in the
# same JVM), one jar with the library inside plus sources and javadoc jars — then the
# consumer project tests/jvm-consumer/, which depends on the installed artifact by
# coordinates only and runs bindings-kotlin/README.md's Kotlin and Java quick starts, and the Gradle build
# tests/gradle-consumer/ (Debian's gradle 4.4.1), which runs the Java one on SQLite from
# mavenLocal() and Maven Central. The native library is
# the test build's (`BATON_PACKAGE_BUILD=test scripts/package jvm`: dev profile, on the
# rust suite's compiled dependencies; scripts/test).

# The cdylib only loads inside the JVM: this suite tests it there (the lint suite lints it).
RUST_EXCLUDE+=(baton-kotlin)

# In the rust suite's tests lane: mvn's cargo step (bindings-kotlin/pom.xml, "cargo-build"),
# the same command in the same environment, so that mvn finds it done.
idle_jvm() {
    step "cargo build (bindings-kotlin and uniffi-bindgen, for mvn)" 30m cargo build --locked \
        --profile dev --target "$(host_triple)" -p baton-kotlin --features=workspace-features --lib --bins
}

ensure_jvm() {
    if ! command -v javac >/dev/null || ! javac -version 2>&1 | grep -Eq 'javac (1[7-9]|[2-9][0-9])'; then
        ensure_apt_packages openjdk-17-jdk-headless
    fi
    command -v mvn >/dev/null || ensure_apt_packages maven
    command -v gradle >/dev/null || ensure_apt_packages gradle
}

suite_jvm() {
    ensure_toolchain
    ensure_jvm
    local version pom_version
    version=$(workspace_version)
    pom_version=$(sed -n 's|^  <version>\(.*\)</version>|\1|p' "$ROOT/bindings-kotlin/pom.xml" | head -1)
    [[ $version == "$pom_version" ]] || die "bindings-kotlin/pom.xml has version $pom_version, the workspace $version"
    [[ -n ${BATON_TEST_REDIS_URL:-} && -n ${BATON_TEST_ETCD_URL:-} ]] \
        || die "the JVM suite needs the servers: run the services suite first (BATON_TEST_REDIS_URL, BATON_TEST_ETCD_URL)"
    step "mvn install (bindings-kotlin: cargo, uniffi, kotlinc, JUnit, jars)" 40m \
        env BATON_PACKAGE_BUILD=test BATON_PACKAGE_TESTS=1 "$ROOT/scripts/package" jvm
    step "jvm-consumer (README samples against the installed jar)" 10m "$ROOT/tests/jvm-consumer/run.sh"
    step "gradle-consumer (the Java quick start on SQLite, dev.baton:baton by coordinates)" 10m \
        env -u BATON_URL "$ROOT/tests/gradle-consumer/run.sh"
}

