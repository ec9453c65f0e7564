# shellcheck shell=bash
# Whole-system test (tests/xlang/): baton's packages as users install them — the wheel
# `baton-lock` into a fresh venv and the npm tarball `baton-lock` into an empty folder,
# both with no cargo/rustc on PATH, and the jar dev.baton:baton by coordinates — and the
# `baton` CLI, contending on one name per store (SQLite, Redis, Redis ?scheme=simple,
# Redlock, etcd, PostgreSQL, MySQL, ZooKeeper) for locks, semaphores and read-write locks,
# with a holder in headless Chromium (the wasm package over etcd's gateway) on etcd;
# then the real peer clients from their registries (redis-py from PyPI, node-redlock from
# npm, redsync and etcd's concurrency.Mutex from Go modules, etcdctl from Debian, Redisson
# and Curator from Maven Central) contending with baton, each history judged by
# tests/xlang/xlang/history.py.
# Needs the servers of the services suite (services.env). Go comes with the machine
# (go.mod needs Go ≥ 1.24, newer than Debian's golang-go).

XLANG_DIR="$ROOT/target/xlang"

no_rust_path() {   # PATH without the folders that hold cargo or rustc
    local d out=()
    IFS=: read -ra dirs <<<"$PATH"
    for d in "${dirs[@]}"; do
        [[ -x $d/cargo || -x $d/rustc ]] || out+=("$d")
    done
    (IFS=:; echo "${out[*]}")
}

xlang_python() {   # a fresh venv: the wheel (no Rust on PATH) and redis-py
    local venv=$XLANG_DIR/venv np whl
    np=$(no_rust_path)
    whl=$(ls "$ROOT"/target/dist/baton_lock-*-cp39-abi3-*.whl) || return 1
    timeout 300 "${BATON_PYTHON:-python3}" -m venv --clear "$venv" || return 1
    # shellcheck disable=SC2016
    env PATH="$np" PIP_DISABLE_PIP_VERSION_CHECK=1 timeout 600 bash -c '
        ! command -v cargo && ! command -v rustc || { echo "cargo/rustc still on PATH" >&2; exit 1; }
        "$1/bin/python" -m pip install -q "$2" "redis>=5,<8" &&
        "$1/bin/python" -c "import baton, redis; print(\"python: baton\", baton.__file__)"' _ "$venv" "$whl"
}

xlang_node() {   # an empty npm project: the tarballs (no Rust on PATH), node-redlock, ioredis
    local dir=$XLANG_DIR/node np tgz addon
    np=$(no_rust_path)
    # The main package and the host's platform package (@baton-lock/<platform>), as a
    # registry install would fetch them.
    tgz=$(ls "$ROOT"/target/dist/baton-lock-[0-9]*.tgz) || return 1
    addon=$(ls "$ROOT"/target/dist/baton-lock-linux-x64-gnu-[0-9]*.tgz) || return 1
    rm -rf "$dir" && mkdir -p "$dir" || return 1
    cp "$ROOT"/tests/xlang/holders/node/*.{cjs,mjs} "$dir/"
    # shellcheck disable=SC2016
    (cd "$dir" && env PATH="$np" timeout 600 bash -c '
        ! command -v cargo && ! command -v rustc || { echo "cargo/rustc still on PATH" >&2; exit 1; }
        npm init -y >/dev/null &&
        npm install --no-audit --no-fund "$1" "$2" redlock@5.0.0-beta.2 "ioredis@^5" >/dev/null &&
        node -e "require(\"baton-lock\"); console.log(\"node: baton-lock (CommonJS) ok\")" &&
        node --input-type=module -e "await import(\"baton-lock\"); console.log(\"node: baton-lock (ESM) ok\")"' _ "$tgz" "$addon")
}

# The JVM holders, each compiled with History.java against its own classpath: Redisson
# (Maven Central), Curator (tests/curator's dependencies, Maven Central) and baton's jar
# (dev.baton:baton from the local repository).
xlang_javac() {   # NAME POM SOURCE-DIR [mvn args…]
    local name=$1 pom=$2 cp=$XLANG_DIR/$1-classpath.txt src=$3; shift 3
    timeout 900 mvn -q -B -ntp -f "$pom" "$@" dependency:build-classpath -Dmdep.outputFile="$cp" || return 1
    rm -rf "$XLANG_DIR/$name-classes"
    timeout 300 javac -nowarn -cp "$(cat "$cp")" -d "$XLANG_DIR/$name-classes" \
        "$ROOT/tests/xlang/holders/java/History.java" "$src"/*.java 2>&1 | grep -v '^Note:' || true
    ls "$XLANG_DIR/$name-classes"/*Holder.class >/dev/null
}

xlang_java() {
    local j=$ROOT/tests/xlang/holders/java version
    version=$(workspace_version)
    xlang_javac redisson "$j/redisson.pom.xml" "$j/redisson" &&
    xlang_javac curator "$ROOT/tests/curator/pom.xml" "$j/curator" &&
    xlang_javac baton "$j/baton.pom.xml" "$j/baton" -Dbaton.version="$version"
}

fresh() {   # fresh FILE SOURCE…: FILE exists and no source is newer
    local f=$1; shift
    [[ -f $f && -z $(find "$@" -newer "$f" -print -quit) ]]
}
# The jar the jvm suite installed, unless a source is newer (then `scripts/package jvm`).
xlang_jar_fresh() {
    local version
    version=$(workspace_version)
    fresh "${MAVEN_REPO:-$HOME/.m2/repository}/dev/baton/baton/$version/baton-$version.jar" \
        "$ROOT"/{core,bindings-kotlin,bindings-support}/src "$ROOT"/bindings-kotlin/pom.xml "$ROOT/Cargo.lock"
}
# The browser holder's wasm package, as the wasm suite built it (else `scripts/package wasm`).
xlang_wasm_fresh() {
    fresh "$ROOT/wasm/pkg/baton_wasm_bg.wasm" "$ROOT"/{core,wasm,bindings-support}/src "$ROOT"/wasm/js \
        "$ROOT"/bindings-node/ts "$ROOT/Cargo.lock"
}

suite_xlang() {
    ensure_toolchain
    ensure_python
    command -v node >/dev/null && command -v npm >/dev/null || die "node/npm not found: install Node.js ≥ 20"
    command -v go >/dev/null || die "go not found: install Go ≥ 1.24 (tests/xlang/holders/go)"
    command -v etcdctl >/dev/null || ensure_apt_packages etcd-client
    command -v javac >/dev/null || ensure_apt_packages default-jdk-headless
    command -v mvn >/dev/null || ensure_apt_packages maven
    command -v chromium >/dev/null || ensure_apt_packages chromium   # the browser holder
    if [[ -z ${BATON_TEST_REDIS_URL:-} ]]; then   # run alone: the servers' URLs from their state dir
        local senv=${BATON_SERVICES_DIR:-/tmp/baton-services}/services.env
        [[ -f $senv ]] || die "no $senv: run the services suite first (scripts/test services xlang)"
        # shellcheck source=/dev/null
        . "$senv"
    fi
    mkdir -p "$XLANG_DIR"
    # The peers' builds download and compile in the background while the packages install.
    log "── in the background: Go peers (go build)"
    local t_bg=$SECONDS go_pid java_pid
    ( cd "$ROOT/tests/xlang/holders/go" && timeout 1200 go build -o "$XLANG_DIR/go-holder" . ) \
        >"$XLANG_DIR/go-build.log" 2>&1 & go_pid=$!
    # The python and node suites of this run packed them already: those are installed as
    # they are; the jvm suite installed the jar.
    local pkgs=()
    [[ -n ${BATON_PYTHON_PACKED:-} ]] || pkgs+=(python)
    [[ -n ${BATON_NODE_PACKED:-} ]] || pkgs+=(node)
    xlang_jar_fresh || pkgs+=(jvm)
    xlang_wasm_fresh || pkgs+=(wasm)
    (( ${#pkgs[@]} == 0 )) || step "packages: ${pkgs[*]} (scripts/package)" 60m "$ROOT/scripts/package" "${pkgs[@]}"
    # The CLI of the rust suite's test build (a no-op after that suite).
    test_build_cli
    export BATON_CLI="$TEST_BUILD_DIR/baton"
    log "── in the background: JVM holders (Redisson, Curator, baton's jar: Maven Central + javac)"
    xlang_java >"$XLANG_DIR/java-build.log" 2>&1 & java_pid=$!
    timed "wheel into a fresh venv, no Rust on PATH" xlang_python
    timed "tarball into an empty npm project, no Rust on PATH" xlang_node
    wait "$go_pid" || { cat "$XLANG_DIR/go-build.log" >&2; die "go build of tests/xlang/holders/go failed"; }
    wait "$java_pid" || { cat "$XLANG_DIR/java-build.log" >&2; die "the JVM holders did not build"; }
    log "   Go peers and JVM holders ready, $(( SECONDS - t_bg ))s after they began"
    export BATON_XLANG_PYTHON="$XLANG_DIR/venv/bin/python" BATON_XLANG_NODE_DIR="$XLANG_DIR/node"
    export BATON_XLANG_GO="$XLANG_DIR/go-holder" BATON_XLANG_WASM_PKG="$ROOT/wasm/pkg"
    BATON_XLANG_JAVA_CP="$XLANG_DIR/redisson-classes:$(cat "$XLANG_DIR/redisson-classpath.txt")"
    BATON_XLANG_CURATOR_CP="$XLANG_DIR/curator-classes:$(cat "$XLANG_DIR/curator-classpath.txt")"
    BATON_XLANG_JAVA_BATON_CP="$XLANG_DIR/baton-classes:$(cat "$XLANG_DIR/baton-classpath.txt")"
    export BATON_XLANG_JAVA_CP BATON_XLANG_CURATOR_CP BATON_XLANG_JAVA_BATON_CP
    step "tests/xlang (every language, real peers)" 20m \
        "${BATON_PYTHON:-python3}" "$ROOT/tests/xlang/run.py" --work "$XLANG_DIR/work"
}

