#!/usr/bin/env bash
# tests/gradle-consumer/run.sh — bindings-kotlin/README.md's Java quick start (the code block after
# `<!-- jvm-sample: java/Quickstart.java -->`) built and run by Gradle against
# dev.baton:baton from the local Maven repository (`mvn -f bindings-kotlin/pom.xml install`
# first), on an embedded SQLite file unless BATON_URL names another store; the output is
# checked: a token, busy while held, the timeout, and a larger token for the second grant.
#   GRADLE   the gradle command (default: gradle, Debian's 4.4.1 runs on JDK 17)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/target/readme-src"
rm -rf "$out" && mkdir -p "$out/java" "$out/kotlin"   # the awk writes every sample; Gradle builds the Java one
awk -v out="$out" '
    /<!-- jvm-sample: / { file = out "/" $3; next }
    file != "" && /^```/ { if (inside) { inside = 0; close(file); file = "" } else { inside = 1 } ; next }
    inside { print > file }
' "$root/bindings-kotlin/README.md"
[[ -s $out/java/Quickstart.java ]] || { echo "bindings-kotlin/README.md has no jvm-sample block for java/Quickstart.java" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)
db="$here/target/quickstart.db"
rm -f "$db" "$db"-*
export BATON_URL=${BATON_URL:-sqlite://$db}
log="$here/target/run.log"
# --no-daemon: nothing left running; the project cache under target/ too (ignored by git).
if ! "${GRADLE:-gradle}" --no-daemon --console=plain -q -p "$here" --project-cache-dir "$here/target/.gradle" \
        -PbatonVersion="$version" run >"$log" 2>&1; then
    cat "$log" >&2
    echo "gradle-consumer: gradle run failed (above)" >&2
    exit 1
fi
cat "$log"
first=$(sed -n 's/^held orders\/42 with token \([0-9][0-9]*\)$/\1/p' "$log")
second=$(sed -n 's/^async token \([0-9][0-9]*\)$/\1/p' "$log")
grep -qx 'busy: true' "$log" || { echo "gradle-consumer: no 'busy: true' while held" >&2; exit 1; }
grep -qx 'timed out, as expected (Timeout)' "$log" || { echo "gradle-consumer: no timeout while held" >&2; exit 1; }
[[ -n $first && -n $second ]] || { echo "gradle-consumer: no tokens in the output" >&2; exit 1; }
(( second > first )) || { echo "gradle-consumer: the second token $second is not above the first $first" >&2; exit 1; }
echo "gradle-consumer: ok (dev.baton:baton:$version from mavenLocal(), $BATON_URL, tokens $first < $second)"
