# shellcheck shell=bash
# The JVM artifact dev.baton:baton: `mvn install` of bindings-kotlin/pom.xml (native library
# built with cargo in release, inside the jar at linux-x86-64/), installed into the local
# Maven repository, and the jar, sources jar, javadoc jar and pom copied into target/dist/.
#   BATON_PACKAGE_TESTS=1   also run the JUnit suite (it needs the servers of scripts/services)

package_jvm() {
    command -v mvn >/dev/null || ensure_apt_packages maven
    command -v javac >/dev/null || ensure_apt_packages openjdk-17-jdk-headless
    local triple version
    triple=$(host_triple)
    version=$(workspace_version)
    local -a skip=(-DskipTests)
    [[ ${BATON_PACKAGE_TESTS:-0} == 1 ]] && skip=()
    local -a build=()
    [[ $BATON_PACKAGE_BUILD == test ]] && build=(-Dcargo.profile=dev -Dcargo.out="$(test_build_dir)" \
        -Dcargo.features=workspace-features)
    mvn -B -ntp -f "$ROOT/bindings-kotlin/pom.xml" -Dcargo.triple="$triple" "${build[@]}" "${skip[@]}" install
    local f
    for f in baton-"$version".jar baton-"$version"-sources.jar baton-"$version"-javadoc.jar; do
        cp "$ROOT/bindings-kotlin/target/$f" "$DIST/"
    done
    cp "$ROOT/bindings-kotlin/pom.xml" "$DIST/baton-$version.pom"
}
