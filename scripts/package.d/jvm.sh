# shellcheck shell=bash
# The JVM artifact dev.baton:baton: `mvn install` of bindings-kotlin/pom.xml, installed into
# the local Maven repository, and the jar, sources jar, javadoc jar and pom copied into
# target/dist/.
#
#   scripts/package jvm                      the host's library (cargo release, by the pom)
#                                            inside the jar at its JNA dir (linux-x86-64/)
#   scripts/package jvm --target T… | --all-targets
#                                            one jar with the library of every target at JNA's
#                                            resource paths (linux-x86-64, linux-aarch64,
#                                            darwin-x86-64, darwin-aarch64, win32-x86-64):
#                                            each built by cargo-zigbuild (glibc 2.17 for the
#                                            linux gnu targets) into target/jvm-natives/<jna dir>/,
#                                            which the pom takes as -Dnatives.dir. The host's
#                                            own (for uniffi-bindgen) comes along even when not
#                                            asked for. musl targets are skipped: JNA has no
#                                            resource dir for musl (it looks in linux-*, which
#                                            holds the glibc build), so the jar does not cover it.
#   BATON_PACKAGE_TESTS=1   also run the JUnit suite (it needs the servers of scripts/services)
#
# Cargo's target directory is read from cargo metadata (CARGO_TARGET_DIR honoured); the pom
# finds it the same way from $CARGO_TARGET_DIR.

PACKAGE_TAKES_TARGETS+=(jvm)

# The library's file name for a triple: libbaton_ffi.so, libbaton_ffi.dylib or baton_ffi.dll.
jvm_lib_name() {
    case $(target_field "$1" os) in
        macos) echo libbaton_ffi.dylib ;; windows) echo baton_ffi.dll ;; *) echo libbaton_ffi.so ;;
    esac
}

# jvm_check_arch TRIPLE FILE: `file` says FILE is a library of TRIPLE's format and architecture.
jvm_check_arch() {
    local triple=$1 lib=$2 want desc
    case $triple in
        x86_64-*-linux-*) want='ELF 64-bit LSB shared object, x86-64' ;;
        aarch64-*-linux-*) want='ELF 64-bit LSB shared object, ARM aarch64' ;;
        x86_64-apple-darwin) want='Mach-O 64-bit .*x86_64' ;;
        aarch64-apple-darwin) want='Mach-O 64-bit .*arm64' ;;
        x86_64-pc-windows-*) want='PE32\+ executable \(DLL\).*x86-64' ;;
        *) die "jvm_check_arch: no expectation for $triple" ;;
    esac
    desc=$(file -b "$lib")
    grep -Eq "$want" <<<"$desc" || die "$lib is not a $triple library: $desc"
    local glibc=""
    if [[ $triple == *-linux-gnu ]]; then   # the newest glibc symbol version it needs
        glibc=$(readelf --dyn-syms -W "$lib" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -n 1)
        [[ $(printf '%s\n' "${glibc#GLIBC_}" "$BATON_GLIBC_MIN" | sort -V | tail -n 1) == "$BATON_GLIBC_MIN" ]] \
            || die "$lib needs $glibc, newer than glibc $BATON_GLIBC_MIN"
        glibc=", needs $glibc"
    fi
    log "   $triple: $(basename "$lib") $(du -h "$lib" | cut -f1): ${desc%%, BuildID*}$glibc"
}

package_jvm() {
    command -v mvn >/dev/null || ensure_apt_packages maven
    command -v javac >/dev/null || ensure_apt_packages openjdk-17-jdk-headless
    local host version target_dir
    host=$(host_triple)
    version=$(workspace_version)
    target_dir=$(cargo_target_dir)
    local -a skip=(-DskipTests)
    [[ ${BATON_PACKAGE_TESTS:-0} == 1 ]] && skip=()
    local -a build=()
    [[ $BATON_PACKAGE_BUILD == test ]] && build=(-Dcargo.profile=dev -Dcargo.out="$(test_build_dir)" \
        -Dcargo.features=workspace-features)
    local -a targets=()
    read -r -a targets <<<"${PACKAGE_TARGETS:-$host}"
    local -a want=()   # JNA resource paths the jar must carry
    if [[ "${targets[*]}" != "$host" ]]; then
        command -v file >/dev/null || ensure_apt_packages file
        local natives="$ROOT/target/jvm-natives" triple jna lib out t0 with_host=0
        rm -rf "$natives" && mkdir -p "$natives"
        for triple in "${targets[@]}"; do
            if [[ $triple == *-musl ]]; then
                log "   $triple: skipped (JNA looks for musl's library in linux-*, which holds the glibc build)"
                continue
            fi
            # A test build's host library is the pom's own (the test profile, on the test
            # build's dependencies), as without --target.
            [[ $BATON_PACKAGE_BUILD == test && $triple == "$host" ]] && continue
            ensure_cross_toolchain "$triple"
            jna=$(target_field "$triple" jna) lib=$(jvm_lib_name "$triple")
            out="$target_dir/$triple/release"
            local -a what=(--lib) profile=(--release)
            # The test build: the dev profile with workspace-features, so the dependencies
            # compiled for this target by the other artefacts' test builds are reused.
            [[ $BATON_PACKAGE_BUILD == test ]] && profile=(--features workspace-features) out="$target_dir/$triple/debug"
            # The host's build also gives the pom its uniffi-bindgen (one build: a plain
            # cargo build beside it would relink the same target dir with another linker).
            [[ $triple == "$host" ]] && what=(--lib --bins) with_host=1
            t0=$SECONDS
            cargo_zigbuild "$triple" --locked "${profile[@]}" -p baton-kotlin "${what[@]}" \
                || die "cargo zigbuild of baton-kotlin for $triple failed"
            log "   $triple: cargo zigbuild in $(( SECONDS - t0 ))s"
            jvm_check_arch "$triple" "$out/$lib"
            mkdir -p "$natives/$jna"
            cp "$out/$lib" "$natives/$jna/$lib"
            want+=("$jna/$lib")
        done
        (( ${#want[@]} )) || [[ $BATON_PACKAGE_BUILD == test ]] \
            || die "scripts/package jvm: no target left to build (${targets[*]})"
        build+=(-Dnatives.dir="$natives")
        # The host's library from the zig build above: the pom runs no cargo of its own.
        (( with_host )) && build+=(-DskipCargo=true -Dcargo.out="$target_dir/$host/release")
        build+=(-Dcargo.jna.dir="$(target_field "$host" jna)" -Dcargo.lib="$(jvm_lib_name "$host")")
        want+=("$(target_field "$host" jna)/$(jvm_lib_name "$host")")
    else
        want+=(linux-x86-64/libbaton_ffi.so)   # the pom's host library (cargo.jna.dir, cargo.lib)
    fi
    mvn -B -ntp -f "$ROOT/bindings-kotlin/pom.xml" -Dcargo.triple="$host" "${build[@]}" "${skip[@]}" install
    local jar="$ROOT/bindings-kotlin/target/baton-$version.jar" entries p
    entries=$(cd "$ROOT/bindings-kotlin/target" && jar tf "$jar") || die "cannot list $jar"
    for p in "${want[@]}"; do
        grep -qxF "$p" <<<"$entries" || die "$jar has no $p"
    done
    log "   baton-$version.jar ($(du -h "$jar" | cut -f1)): $(grep -E '^(linux|darwin|win32)-[^/]+/.+' <<<"$entries" | tr '\n' ' ')"
    local f
    for f in baton-"$version".jar baton-"$version"-sources.jar baton-"$version"-javadoc.jar; do
        cp "$ROOT/bindings-kotlin/target/$f" "$DIST/"
    done
    cp "$ROOT/bindings-kotlin/pom.xml" "$DIST/baton-$version.pom"
}
