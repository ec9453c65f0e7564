#!/usr/bin/env bash
# The npm packages as users install them. Takes the tarballs of `scripts/package node`
# (arguments, or one argument of newline-separated paths: the main baton-lock-VERSION.tgz
# and platform packages baton-lock-PLATFORM-VERSION.tgz; the host's is also looked for
# beside the main one), or, without arguments, packs them from this folder's build
# (scripts/npm-dist.mjs; run after `npm run build`). Then:
#   - the main tarball holds README.md, the loader and no addon; the host's platform
#     package @baton-lock/PLATFORM holds baton.PLATFORM.node;
#   - main + the host's platform package installed into an empty folder: a smoke script
#     (ESM import, CommonJS require, a lock on an SQLite file, the shipped typings through
#     tsc) with the addon loaded from @baton-lock/PLATFORM;
#   - the main tarball alone (optional dependencies left out, offline): `require` fails with
#     the loader's error naming the platform and @baton-lock/PLATFORM;
#   - `npm install <folder>`: the same smoke script over the folder's local build.
set -euo pipefail

PKG=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/baton-node-pack.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PLATFORM=$(node -p 'require(process.argv[1]).currentPlatform()' "$PKG/native/platform.js")

smoke() {   # smoke DIR: the installed package works from DIR
    local app=$1
    cat >"$app/smoke.mjs" <<'JS'
import { connect, BatonError } from 'baton-lock';
const client = await connect('memory://smoke');
const guard = await client.lock('smoke').acquire({ timeoutMs: 1000 });
if (typeof guard.token !== 'bigint') throw new Error('token is not a bigint');
if ((await client.lock('smoke').tryAcquire()) !== null) throw new Error('not exclusive');
await guard.release();
// The embedded SQLite store (a file, shared by every process on the machine).
const db = await connect(`sqlite://${process.cwd()}/smoke.db`);
const held = await db.lock('smoke').acquire({ timeoutMs: 1000 });
if (typeof held.token !== 'bigint') throw new Error('sqlite token is not a bigint');
if ((await db.lock('smoke').tryAcquire()) !== null) throw new Error('sqlite lock not exclusive');
await held.release();
await db.close();
const err = await connect('nope://x').catch((e) => e);
if (!(err instanceof BatonError && err.code === 'InvalidUrl')) throw new Error(`bad error: ${err}`);
await client.close();
console.log(`esm ok, token ${guard.token}, sqlite token ${held.token}`);
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

tar_file() {   # tar_file TGZ PATH: one file of a tarball, on stdout
    tar xzf "$1" -O "$2"
}

cd "$PKG"
MAIN= PLAT= VERSION=
mapfile -t given < <(printf '%s\n' "$@" | sed '/^$/d')
if (( ${#given[@]} == 0 )); then
    mkdir "$TMP/dist"
    mapfile -t given < <(node scripts/npm-dist.mjs --out "$TMP/dist" \
        --addon "$PLATFORM=$PKG/native/baton.$PLATFORM.node")
fi
for t in "${given[@]}"; do
    name=$(tar_file "$t" package/package.json | node -p 'JSON.parse(require("fs").readFileSync(0)).name')
    case $name in
        baton-lock) MAIN=$t ;;
        "@baton-lock/$PLATFORM") PLAT=$t ;;
        @baton-lock/*) echo "not for this host ($PLATFORM): $name ($t)" ;;
        *) echo "not a baton-lock package: $t ($name)" >&2; exit 1 ;;
    esac
done
[[ -n $MAIN ]] || { echo "no main baton-lock tarball among: ${given[*]}" >&2; exit 1; }
VERSION=$(tar_file "$MAIN" package/package.json | node -p 'JSON.parse(require("fs").readFileSync(0)).version')
if [[ -z $PLAT && -f $(dirname "$MAIN")/baton-lock-$PLATFORM-$VERSION.tgz ]]; then
    PLAT=$(dirname "$MAIN")/baton-lock-$PLATFORM-$VERSION.tgz
fi
[[ -n $PLAT ]] || { echo "no @baton-lock/$PLATFORM tarball given or beside $MAIN" >&2; exit 1; }
cp "$MAIN" "$PLAT" "$TMP/"
MAIN=$TMP/$(basename "$MAIN") PLAT=$TMP/$(basename "$PLAT")

listing=$(tar tzf "$MAIN")
echo "packed $(basename "$MAIN") ($(du -h "$MAIN" | cut -f1)): $(wc -l <<<"$listing") files"
# npm ships a README at the package root whatever `files` says; make sure it is there.
grep -qx 'package/README.md' <<<"$listing" || { echo "README.md missing from $MAIN" >&2; exit 1; }
grep -qx 'package/native/native.js' <<<"$listing" || { echo "the loader is missing from $MAIN" >&2; exit 1; }
! grep -q '\.node$' <<<"$listing" || { echo "$MAIN holds an addon: the platform packages carry them" >&2; exit 1; }
tar_file "$MAIN" package/package.json | node -e '
    const p = JSON.parse(require("fs").readFileSync(0));
    const want = `@baton-lock/${process.argv[1]}`;
    if ((p.optionalDependencies ?? {})[want] !== p.version) throw new Error(`optionalDependencies lack ${want}@${p.version}`);
    console.log(`main lists ${Object.keys(p.optionalDependencies).join(", ")}`);' "$PLATFORM"
echo "packed $(basename "$PLAT") ($(du -h "$PLAT" | cut -f1)): $(tar tzf "$PLAT" | tr '\n' ' ')"
tar tzf "$PLAT" | grep -qx "package/baton.$PLATFORM.node" || { echo "no addon in $PLAT" >&2; exit 1; }

# main + the host's platform package: the addon comes from @baton-lock/PLATFORM.
mkdir "$TMP/from-tarball"
(cd "$TMP/from-tarball" && npm init -y >/dev/null && npm install --offline --no-audit --no-fund "$MAIN" "$PLAT")
smoke "$TMP/from-tarball"
(cd "$TMP/from-tarball" && node -e '
    const { loadAddon } = require("./node_modules/baton-lock/native/platform.js");
    const { source, path } = loadAddon({ dir: require("path").resolve("node_modules/baton-lock/native") });
    if (source !== "package" || path !== `@baton-lock/${process.argv[1]}`) throw new Error(`addon from ${source} ${path}`);
    console.log(`addon from ${path}: ${require.resolve(path)}`);' "$PLATFORM")

# The main tarball alone: the loader's error names the platform and the missing package.
mkdir "$TMP/main-only"
(cd "$TMP/main-only" && npm init -y >/dev/null \
    && npm install --offline --omit=optional --no-audit --no-fund "$MAIN" >/dev/null)
(cd "$TMP/main-only" && node -e '
    try { require("baton-lock"); } catch (e) {
      const want = [`no native addon for this platform, ${process.argv[1]}`, `@baton-lock/${process.argv[1]}`, "npm run build"];
      for (const w of want) if (!e.message.includes(w)) throw new Error(`the error lacks "${w}":\n${e.message}`);
      console.log(`main alone: ${e.message.split("\n")[0]}`);
      process.exit(0);
    }
    throw new Error("baton-lock loaded with no platform package");' "$PLATFORM")

mkdir "$TMP/from-folder"
(cd "$TMP/from-folder" && npm init -y >/dev/null && npm install --no-audit --no-fund "$PKG")
smoke "$TMP/from-folder"
