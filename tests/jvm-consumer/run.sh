#!/usr/bin/env bash
# tests/jvm-consumer/run.sh — copy bindings-kotlin/README.md's Kotlin and Java quick starts (the code blocks
# after `<!-- jvm-sample: FILE -->`) into target/readme-src/, then build and run them against
# dev.baton:baton from the local Maven repository. BATON_URL picks the store (the samples'
# default is the Redis of scripts/services).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/target/readme-src"
rm -rf "$out" && mkdir -p "$out/kotlin" "$out/java"
# Each marker names the file the next fenced block goes to.
awk -v out="$out" '
    /<!-- jvm-sample: / { file = out "/" $3; next }
    file != "" && /^```/ { if (inside) { inside = 0; close(file); file = "" } else { inside = 1 } ; next }
    inside { print > file }
' "$root/bindings-kotlin/README.md"
for f in kotlin/Quickstart.kt java/Quickstart.java; do
    [[ -s $out/$f ]] || { echo "bindings-kotlin/README.md has no jvm-sample block for $f" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)
# The shared Redis of scripts/services under a prefix of its own, unless BATON_URL is given.
if [[ -z ${BATON_URL:-} && -n ${BATON_TEST_REDIS_URL:-} ]]; then
    export BATON_URL="${BATON_TEST_REDIS_URL}?prefix=jvm-consumer-$$-"
fi
exec mvn -B -q -ntp -f "$here/pom.xml" -Dbaton.version="$version" verify
