#!/usr/bin/env bash
# Packs bindings-node with `npm pack` (or takes the tarball given as $1, e.g. the one of
# `scripts/package node`), installs the tarball into an empty folder, and runs
# a smoke script there (ESM import, CommonJS require, and the shipped typings through tsc);
# then does the same with `npm install <folder>`. Checks that the tarball holds README.md.
# Run after `npm run build`.
set -euo pipefail

PKG=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/baton-node-pack.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

smoke() {   # smoke DIR: the installed package works from DIR
    local app=$1
    cat >"$app/smoke.mjs" <<'JS'
import { connect, BatonError } from 'baton-lock';
const client = await connect('memory://smoke');
const guard = await client.lock('smoke').acquire({ timeoutMs: 1000 });
if (typeof guard.token !== 'bigint') throw new Error('token is not a bigint');
if ((await client.lock('smoke').tryAcquire()) !== null) throw new Error('not exclusive');
await guard.release();
const err = await connect('nope://x').catch((e) => e);
if (!(err instanceof BatonError && err.code === 'InvalidUrl')) throw new Error(`bad error: ${err}`);
await client.close();
console.log(`esm ok, token ${guard.token}`);
JS
    cat >"$app/smoke.cjs" <<'JS'
const { connect } = require('baton-lock');
connect('memory://smoke-cjs').then(async (client) => {
  const n = await client.lock('x').using(async (g) => g.token);
  await client.close();
  console.log(`cjs ok, token ${n}`);
});
JS
    cat >"$app/smoke.ts" <<'TS'
import { connect, type LockGuard } from 'baton-lock';
export async function f(): Promise<bigint> {
  const client = await connect('memory://');
  await using guard: LockGuard = await client.lock('x').acquire({ timeoutMs: 1_000 });
  return guard.token;
}
TS
    (cd "$app" && node smoke.mjs && node smoke.cjs)
    # The shipped index.d.ts, as a consumer's strict tsc sees it.
    (cd "$app" && node "$PKG/node_modules/typescript/bin/tsc" --noEmit --strict --target ES2022 \
        --lib ES2022,ESNext.Disposable --module node16 --typeRoots "$PKG/node_modules/@types" \
        --types node smoke.ts && echo "types ok")
}

cd "$PKG"
if [[ -n ${1:-} ]]; then
    cp "$1" "$TMP/" && tgz=$(basename "$1")
else
    tgz=$(npm pack --silent --pack-destination "$TMP" | tail -n 1)
fi
echo "packed $tgz ($(du -h "$TMP/$tgz" | cut -f1)): $(tar tzf "$TMP/$tgz" | wc -l) files"
# npm ships a README at the package root whatever `files` says; make sure it is there.
# (grep without -q reads the whole listing: an early exit would fail tar under pipefail.)
tar tzf "$TMP/$tgz" | grep -x 'package/README.md' >/dev/null || { echo "README.md missing from $tgz" >&2; exit 1; }
mkdir "$TMP/from-tarball"
(cd "$TMP/from-tarball" && npm init -y >/dev/null && npm install --no-audit --no-fund "$TMP/$tgz")
smoke "$TMP/from-tarball"

mkdir "$TMP/from-folder"
(cd "$TMP/from-folder" && npm init -y >/dev/null && npm install --no-audit --no-fund "$PKG")
smoke "$TMP/from-folder"
