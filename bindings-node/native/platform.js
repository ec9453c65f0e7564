'use strict';
// Which native addon this Node process loads, and the error it gets when there is none.
//
// The addon comes from one of (in this order):
//   1. a local build next to this file, native/baton.<platform>.node: what `npm run build`
//      makes in a checkout (the test suite and `npm install /path/to/bindings-node` use it);
//   2. the platform's package @baton-lock/<platform>, an optional dependency of
//      baton-lock that npm installs only where its `os`/`cpu`/`libc` match.
// <platform> is napi-rs's name: linux-x64-gnu, linux-arm64-musl, darwin-arm64, win32-x64-gnu…
//
// Everything but detectLibc() and loadAddon() is a pure function of its arguments, so
// test/loader.test.ts asks about platforms this machine is not. native.js (the loader the
// facade imports) calls loadAddon(). Plain CommonJS with no dependencies: it runs before
// anything else of the package.

const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

/** The npm scope of the platform packages. */
const SCOPE = '@baton-lock';
/** napi's binaryName (package.json): the addon files are baton.<platform>.node. */
const BINARY = 'baton';
/** The ABI of the Windows addon baton builds (x86_64-pc-windows-gnu: MinGW). */
const WINDOWS_ABI = 'gnu';
/** Overrides the detected platform name (a libc detection that guesses wrong; the tests). */
const PLATFORM_ENV = 'BATON_NODE_PLATFORM';

/**
 * The C library of this Linux process: 'glibc', 'musl', or null when neither is visible
 * (not Linux). Like napi-rs's loader: the process report names the glibc it runs on; else
 * /usr/bin/ldd (a shell script on glibc, musl's loader on Alpine) or the loaded objects
 * say musl.
 */
function detectLibc({ platform = process.platform, report = processReport, ldd = readLdd } = {}) {
  if (platform !== 'linux') return null;
  const r = typeof report === 'function' ? report() : report;
  if (r && r.header && r.header.glibcVersionRuntime) return 'glibc';
  const text = typeof ldd === 'function' ? ldd() : ldd;
  if (typeof text === 'string' && text.includes('musl')) return 'musl';
  if (r && Array.isArray(r.sharedObjects) && r.sharedObjects.some((f) => /libc\.musl-|ld-musl-/.test(f))) {
    return 'musl';
  }
  return typeof text === 'string' && /GNU|GLIBC|glibc/.test(text) ? 'glibc' : null;
}

function processReport() {
  if (!process.report || typeof process.report.getReport !== 'function') return null;
  const excluded = process.report.excludeNetwork;
  try {
    process.report.excludeNetwork = true; // no DNS lookups for the report's network part
    return process.report.getReport();
  } catch {
    return null;
  } finally {
    process.report.excludeNetwork = excluded;
  }
}

function readLdd() {
  try {
    return readFileSync('/usr/bin/ldd', 'utf8');
  } catch {
    return null;
  }
}

/**
 * napi-rs's platform name of (platform, arch, libc): linux-<arch>-gnu or -musl,
 * darwin-<arch>, win32-<arch>-gnu (the ABI baton builds for Windows), <platform>-<arch>
 * for the rest.
 */
function platformName({ platform, arch, libc }) {
  if (platform === 'linux') return `linux-${arch}-${libc === 'musl' ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-${WINDOWS_ABI}`;
  return `${platform}-${arch}`;
}

/** This process's platform name (or BATON_NODE_PLATFORM's, when set). */
function currentPlatform(env = process.env) {
  const forced = env[PLATFORM_ENV];
  if (forced) return forced;
  return platformName({ platform: process.platform, arch: process.arch, libc: detectLibc() });
}

/** The npm package of a platform's prebuilt addon. */
function packageName(platform) {
  return `${SCOPE}/${platform}`;
}

/** The file name of a platform's addon, in native/ and inside its package. */
function addonFile(platform) {
  return `${BINARY}.${platform}.node`;
}

/** The platforms a baton-lock package.json lists a prebuilt package for (its optionalDependencies). */
function publishedPlatforms(pkg) {
  return Object.keys((pkg && pkg.optionalDependencies) || {})
    .filter((name) => name.startsWith(`${SCOPE}/`))
    .map((name) => name.slice(SCOPE.length + 1))
    .sort();
}

function firstLine(e) {
  return String((e && e.message) || e).split('\n')[0];
}

/**
 * The Error of a platform with no loadable addon. `attempts`: what was tried, in order,
 * as { source: 'local' | 'package', path?, error } (error null: the local file is absent);
 * `published`: the platforms this baton-lock has packages for; `version`: its version.
 * The message names the platform, the missing package, each load error, and how to build
 * from source; the package's load error (else the local one's) is the `cause`.
 */
function missingAddonError({ platform, attempts, published, version, node = process.version }) {
  const pkg = packageName(platform);
  const lines = [`baton-lock: no native addon for this platform, ${platform} (Node ${node}).`];
  let cause;
  // The package first: it is what a user of the published package is missing.
  const shown = [...attempts].sort((a, b) => (a.source === 'package' ? 0 : 1) - (b.source === 'package' ? 0 : 1));
  for (const a of shown) {
    if (a.source === 'package') {
      const notInstalled =
        a.error && a.error.code === 'MODULE_NOT_FOUND' && String(a.error.message).includes(`'${pkg}'`);
      lines.push(
        notInstalled
          ? `  - the prebuilt addon of ${platform} is the package ${pkg}, which is not installed: ${firstLine(a.error)}`
          : `  - the package ${pkg} is installed but its addon failed to load: ${firstLine(a.error)}`,
      );
    } else if (a.error) {
      lines.push(`  - the local build ${a.path} failed to load: ${firstLine(a.error)}`);
    } else {
      lines.push(`  - no local build (${a.path} does not exist)`);
    }
    if (a.error && !cause) cause = a.error;
  }
  const v = version ? ` ${version}` : '';
  if (published.length === 0) {
    lines.push(`This baton-lock${v} lists no prebuilt packages (a source checkout, or a package packed without them).`);
  } else if (published.includes(platform)) {
    lines.push(
      `baton-lock${v} has a prebuilt package for ${platform}: npm installs ${pkg} with it as an optional dependency, ` +
        'unless optional dependencies were left out (--omit=optional, --no-optional) or the lockfile was made on ' +
        `another platform; \`npm install ${pkg}@${version || 'VERSION'}\` adds it.`,
    );
  } else {
    lines.push(`baton-lock${v} has prebuilt packages for: ${published.join(', ')}; not for ${platform}.`);
  }
  lines.push(
    'To build the addon from source (Rust from https://rustup.rs, and npm): in a checkout of baton, run ' +
      '`npm install && npm run build` in bindings-node/, then `npm install /path/to/baton/bindings-node` in your project.',
  );
  const err = new Error(lines.join('\n'), cause ? { cause } : undefined);
  err.code = 'BATON_ADDON_MISSING';
  err.platform = platform;
  err.packageName = pkg;
  return err;
}

/**
 * Loads the addon for `platform` (default: this process's): the local build in `dir`,
 * then the platform package; returns { binding, source, path }, or throws
 * missingAddonError. `load` is `require` (the tests pass their own to point elsewhere).
 */
function loadAddon({ platform = currentPlatform(), dir = __dirname, load = require, pkg } = {}) {
  const attempts = [];
  const local = join(dir, addonFile(platform));
  if (existsSync(local)) {
    try {
      return { binding: load(local), source: 'local', path: local };
    } catch (error) {
      attempts.push({ source: 'local', path: local, error });
    }
  } else {
    attempts.push({ source: 'local', path: local, error: null });
  }
  const name = packageName(platform);
  try {
    return { binding: load(name), source: 'package', path: name };
  } catch (error) {
    attempts.push({ source: 'package', path: name, error });
  }
  const meta = pkg === undefined ? readPackageJson(dir) : pkg;
  throw missingAddonError({
    platform,
    attempts,
    published: publishedPlatforms(meta),
    version: meta && meta.version,
  });
}

function readPackageJson(dir) {
  try {
    return JSON.parse(readFileSync(join(dir, '..', 'package.json'), 'utf8'));
  } catch {
    return null;
  }
}

module.exports = {
  SCOPE,
  PLATFORM_ENV,
  addonFile,
  currentPlatform,
  detectLibc,
  loadAddon,
  missingAddonError,
  packageName,
  platformName,
  publishedPlatforms,
};
