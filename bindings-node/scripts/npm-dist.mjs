// Packs the npm packages of baton-lock in napi-rs's per-platform layout:
//
//   baton-lock-VERSION.tgz                  the main package: the compiled facade (dist/),
//                                           the loader (native/native.js, platform.js) and
//                                           the addon's typings, no addon; its
//                                           optionalDependencies list the platform packages
//                                           packed here, exactly VERSION
//   baton-lock-PLATFORM-VERSION.tgz         @baton-lock/PLATFORM: the addon
//                                           baton.PLATFORM.node, with os/cpu/libc so npm
//                                           installs it only where it runs
//
//   node scripts/npm-dist.mjs --out DIR [--addon PLATFORM=FILE]…
//
// PLATFORM is napi-rs's name (linux-x64-gnu, linux-arm64-musl, darwin-arm64,
// win32-x64-gnu…). Run after `npm run build` (or build:native:test + build:ts): the main
// package needs dist/ and native/native.d.ts. Prints the tarballs' paths, main first.
// (napi's own `create-npm-dirs`/`prepublish` name platform packages after the main one,
// `baton-lock-linux-x64-gnu`; baton's are scoped, so this script writes the layout itself.)

import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const PKG = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { addonFile, packageName } = createRequire(import.meta.url)('../native/platform.js');

function usage(msg) {
  console.error(`npm-dist: ${msg}\nusage: node scripts/npm-dist.mjs --out DIR [--addon PLATFORM=FILE]…`);
  process.exit(2);
}

let out;
const addons = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--out') out = argv[++i];
  else if (a === '--addon') {
    const m = /^([a-z0-9]+-[a-z0-9]+(?:-[a-z]+)?)=(.+)$/.exec(argv[++i] ?? '');
    if (!m) usage(`--addon takes PLATFORM=FILE, not ${argv[i]}`);
    addons.push({ platform: m[1], file: resolve(m[2]) });
  } else usage(`unknown argument ${a}`);
}
if (!out) usage('--out DIR is required');
out = resolve(out);

/** os, cpu and libc of a napi platform name, as npm's package.json fields. */
function platformFields(platform) {
  const [os, cpu, abi] = platform.split('-');
  const fields = { os: [os], cpu: [cpu] };
  if (os === 'linux') fields.libc = [abi === 'musl' ? 'musl' : 'glibc'];
  return fields;
}

function npmPack(dir) {
  // --ignore-scripts: the staged folders have no build steps; the checks are here.
  const r = spawnSync('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', out], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`npm pack in ${dir} failed (exit ${r.status})`);
  const name = r.stdout.trim().split('\n').pop();
  const path = join(out, name);
  if (!existsSync(path)) throw new Error(`npm pack in ${dir} left no ${path}`);
  return path;
}

function tarList(path) {
  const r = spawnSync('tar', ['tzf', path], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar tzf ${path} failed`);
  return r.stdout.split('\n').filter(Boolean);
}

const main = JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8'));
const { version } = main;
for (const f of ['dist/index.js', 'dist/index.d.ts', 'native/native.d.ts', 'native/native.js', 'native/platform.js']) {
  if (!existsSync(join(PKG, f))) usage(`${join(PKG, f)} is missing: run \`npm run build\` first`);
}
for (const { platform, file } of addons) {
  if (!existsSync(file)) usage(`the addon of ${platform}, ${file}, does not exist`);
}
mkdirSync(out, { recursive: true });
const stage = mkdtempSync(join(tmpdir(), 'baton-npm-dist-'));
const packed = [];
try {
  // The main package: what `files` lists, with the platform packages as optionalDependencies.
  const mainDir = join(stage, 'baton-lock');
  mkdirSync(join(mainDir, 'native'), { recursive: true });
  cpSync(join(PKG, 'dist'), join(mainDir, 'dist'), { recursive: true });
  for (const f of ['native/native.js', 'native/platform.js', 'native/native.d.ts', 'README.md']) {
    copyFileSync(join(PKG, f), join(mainDir, f));
  }
  const { devDependencies: _dev, scripts: _scripts, ...shipped } = main;
  shipped.optionalDependencies = Object.fromEntries(
    addons.map(({ platform }) => [packageName(platform), version]).sort(([a], [b]) => a.localeCompare(b)),
  );
  writeFileSync(join(mainDir, 'package.json'), `${JSON.stringify(shipped, null, 2)}\n`);
  const mainTgz = npmPack(mainDir);
  const inMain = tarList(mainTgz);
  if (inMain.some((f) => f.endsWith('.node'))) throw new Error(`${mainTgz} holds an addon: ${inMain.join(' ')}`);
  packed.push(mainTgz);

  for (const { platform, file } of addons) {
    const dir = join(stage, platform);
    mkdirSync(dir);
    const addon = addonFile(platform);
    copyFileSync(file, join(dir, addon));
    const name = packageName(platform);
    writeFileSync(
      join(dir, 'package.json'),
      `${JSON.stringify(
        {
          name,
          version,
          description: `The native addon of baton-lock for ${platform} (install baton-lock, which depends on this)`,
          license: main.license,
          main: addon,
          files: [addon],
          ...platformFields(platform),
          engines: main.engines,
        },
        null,
        2,
      )}\n`,
    );
    writeFileSync(
      join(dir, 'README.md'),
      `# ${name}\n\nThe prebuilt native addon (\`${addon}\`) of [baton-lock](https://www.npmjs.com/package/baton-lock) ` +
        `for ${platform}. Install \`baton-lock\`: npm adds this package where it runs (an optional dependency ` +
        `with \`os\`/\`cpu\`${platformFields(platform).libc ? '/`libc`' : ''} fields).\n`,
    );
    const tgz = npmPack(dir);
    if (!tarList(tgz).includes(`package/${addon}`)) throw new Error(`${tgz} holds no package/${addon}`);
    packed.push(tgz);
  }
} finally {
  rmSync(stage, { recursive: true, force: true });
}
for (const p of packed) console.log(p);
