// The addon's loader (native/native.js over native/platform.js): which platform name and
// package this process needs, the local build it loads in this checkout, and the error a
// platform with no addon gets — asked of the pure functions with platforms this machine is
// not, and of the real loader in a child process pointed at a platform that has nothing
// installed (BATON_NODE_PLATFORM).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { tempDir } from './helpers.js';

interface Attempt {
  source: 'local' | 'package';
  path: string;
  error: (Error & { code?: string }) | null;
}
interface Platform {
  SCOPE: string;
  PLATFORM_ENV: string;
  platformName(p: { platform: string; arch: string; libc: string | null }): string;
  detectLibc(o?: { platform?: string; report?: unknown; ldd?: unknown }): 'glibc' | 'musl' | null;
  currentPlatform(env?: Record<string, string | undefined>): string;
  packageName(platform: string): string;
  addonFile(platform: string): string;
  publishedPlatforms(pkg: unknown): string[];
  missingAddonError(o: {
    platform: string;
    attempts: Attempt[];
    published: string[];
    version?: string;
    node?: string;
  }): Error & { code: string; platform: string; packageName: string };
  loadAddon(o?: {
    platform?: string;
    dir?: string;
    load?: (id: string) => unknown;
    pkg?: unknown;
  }): { binding: Record<string, unknown>; source: string; path: string };
}

const PKG = join(__dirname, '..');
const NATIVE = join(PKG, 'native');
const platform = createRequire(__filename)(join(NATIVE, 'platform.js')) as Platform;

/** A loader error whose message and fields name `plat`, its package and how to build. */
function assertNamesPlatform(message: string, plat: string): void {
  assert.match(message, new RegExp(`no native addon for this platform, ${plat}\\b`));
  assert.ok(message.includes(`@baton-lock/${plat}`), message);
  assert.ok(message.includes('`npm install && npm run build` in bindings-node/'), message);
  assert.ok(message.includes('https://rustup.rs'), message);
}

describe('platform names', () => {
  it('follow napi-rs: platform, arch and, on Linux, the libc', () => {
    const cases: [string, string, string | null, string][] = [
      ['linux', 'x64', 'glibc', 'linux-x64-gnu'],
      ['linux', 'arm64', 'glibc', 'linux-arm64-gnu'],
      ['linux', 'x64', 'musl', 'linux-x64-musl'],
      ['linux', 'arm64', 'musl', 'linux-arm64-musl'],
      ['linux', 'x64', null, 'linux-x64-gnu'],
      ['darwin', 'x64', null, 'darwin-x64'],
      ['darwin', 'arm64', null, 'darwin-arm64'],
      ['win32', 'x64', null, 'win32-x64-gnu'],
      ['freebsd', 'x64', null, 'freebsd-x64'],
    ];
    for (const [p, arch, libc, want] of cases) {
      assert.equal(platform.platformName({ platform: p, arch, libc }), want, `${p} ${arch} ${libc}`);
      assert.equal(platform.packageName(want), `@baton-lock/${want}`);
      assert.equal(platform.addonFile(want), `baton.${want}.node`);
    }
  });

  it('tell glibc from musl by the process report, then ldd and the loaded objects', () => {
    const glibc = { header: { glibcVersionRuntime: '2.36' }, sharedObjects: ['/lib/x86_64-linux-gnu/libc.so.6'] };
    const musl = { header: {}, sharedObjects: ['/lib/ld-musl-aarch64.so.1'] };
    assert.equal(platform.detectLibc({ platform: 'linux', report: glibc, ldd: null }), 'glibc');
    assert.equal(platform.detectLibc({ platform: 'linux', report: musl, ldd: null }), 'musl');
    assert.equal(platform.detectLibc({ platform: 'linux', report: { header: {} }, ldd: '#!/bin/sh\n# musl libc' }), 'musl');
    assert.equal(platform.detectLibc({ platform: 'linux', report: null, ldd: '#!/bin/bash\n# GNU C Library' }), 'glibc');
    assert.equal(platform.detectLibc({ platform: 'darwin', report: glibc, ldd: null }), null);
  });

  it('this process: the report decides, and BATON_NODE_PLATFORM overrides', () => {
    const libc = platform.detectLibc();
    if (process.platform === 'linux') {
      const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
      assert.equal(libc, report.header?.glibcVersionRuntime ? 'glibc' : 'musl');
    } else {
      assert.equal(libc, null);
    }
    assert.equal(
      platform.currentPlatform({}),
      platform.platformName({ platform: process.platform, arch: process.arch, libc }),
    );
    assert.equal(platform.currentPlatform({ [platform.PLATFORM_ENV]: 'linux-arm64-musl' }), 'linux-arm64-musl');
  });
});

describe('the missing-addon error', () => {
  const notFound = Object.assign(new Error("Cannot find module '@baton-lock/linux-arm64-musl'\nRequire stack:\n- x"), {
    code: 'MODULE_NOT_FOUND',
  });

  it('names the platform, the missing package, the load error and the build from source', () => {
    const e = platform.missingAddonError({
      platform: 'linux-arm64-musl',
      attempts: [
        { source: 'local', path: '/pkg/native/baton.linux-arm64-musl.node', error: null },
        { source: 'package', path: '@baton-lock/linux-arm64-musl', error: notFound },
      ],
      published: ['darwin-arm64', 'linux-x64-gnu'],
      version: '1.2.3',
      node: 'v20.0.0',
    });
    assert.ok(e instanceof Error);
    assert.equal(e.code, 'BATON_ADDON_MISSING');
    assert.equal(e.platform, 'linux-arm64-musl');
    assert.equal(e.packageName, '@baton-lock/linux-arm64-musl');
    assert.equal(e.cause, notFound);
    assertNamesPlatform(e.message, 'linux-arm64-musl');
    assert.match(e.message, /\(Node v20\.0\.0\)/);
    assert.match(e.message, /package @baton-lock\/linux-arm64-musl, which is not installed: Cannot find module '@baton-lock\/linux-arm64-musl'$/m);
    assert.ok(!e.message.includes('Require stack'), 'one line of each load error');
    assert.match(e.message, /no local build \(\/pkg\/native\/baton\.linux-arm64-musl\.node does not exist\)/);
    assert.match(e.message, /baton-lock 1\.2\.3 has prebuilt packages for: darwin-arm64, linux-x64-gnu; not for linux-arm64-musl\./);
  });

  it('says how to get a published package that optional dependencies left out', () => {
    const e = platform.missingAddonError({
      platform: 'linux-x64-gnu',
      attempts: [{ source: 'package', path: '@baton-lock/linux-x64-gnu', error: Object.assign(new Error("Cannot find module '@baton-lock/linux-x64-gnu'"), { code: 'MODULE_NOT_FOUND' }) }],
      published: ['linux-x64-gnu'],
      version: '1.2.3',
    });
    assert.match(e.message, /has a prebuilt package for linux-x64-gnu/);
    assert.match(e.message, /--omit=optional/);
    assert.match(e.message, /`npm install @baton-lock\/linux-x64-gnu@1\.2\.3`/);
  });

  it('lists what the package.json publishes: its @baton-lock optionalDependencies', () => {
    assert.deepEqual(platform.publishedPlatforms(null), []);
    assert.deepEqual(
      platform.publishedPlatforms({
        optionalDependencies: { '@baton-lock/win32-x64-gnu': '1', 'fsevents': '2', '@baton-lock/darwin-x64': '1' },
      }),
      ['darwin-x64', 'win32-x64-gnu'],
    );
  });

  it('an installed package whose addon does not load is reported as such (a real dlopen failure)', () => {
    const app = tempDir('loader');
    const pkgDir = join(app, 'node_modules', '@baton-lock', 'linux-x64-gnu');
    mkdirSync(pkgDir, { recursive: true });
    writeFileSync(join(pkgDir, 'package.json'), JSON.stringify({ name: '@baton-lock/linux-x64-gnu', main: 'baton.linux-x64-gnu.node' }));
    writeFileSync(join(pkgDir, 'baton.linux-x64-gnu.node'), 'not a shared object\n');
    mkdirSync(join(app, 'native'));
    const load = createRequire(join(app, 'native', 'native.js'));
    assert.throws(
      () => platform.loadAddon({ platform: 'linux-x64-gnu', dir: join(app, 'native'), load, pkg: null }),
      (thrown: unknown) => {
        const e = thrown as Error;
        assertNamesPlatform(e.message, 'linux-x64-gnu');
        assert.match(e.message, /the package @baton-lock\/linux-x64-gnu is installed but its addon failed to load: .*baton\.linux-x64-gnu\.node/);
        assert.match(e.message, /lists no prebuilt packages/);
        assert.ok(e.cause instanceof Error);
        return true;
      },
    );
  });
});

describe('the loader', () => {
  it('loads the local build of this checkout (npm run build) for this platform', () => {
    const { binding, source, path } = platform.loadAddon();
    assert.equal(source, 'local');
    assert.equal(path, join(NATIVE, platform.addonFile(platform.currentPlatform())));
    assert.equal(typeof binding.connect, 'function');
  });

  it('throws the error in a process pointed at a platform with nothing installed', () => {
    const probe = `
      try { require(process.argv[1]); console.log(JSON.stringify({ loaded: true })); }
      catch (e) { console.log(JSON.stringify({ message: e.message, code: e.code, pkg: e.packageName, cause: String(e.cause && e.cause.message) })); }`;
    for (const entry of [join(NATIVE, 'native.js'), join(PKG, 'dist', 'index.js')]) {
      const r = spawnSync(process.execPath, ['-e', probe, entry], {
        env: { ...process.env, BATON_NODE_PLATFORM: 'linux-arm64-musl' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(r.status, 0, r.stderr);
      const got = JSON.parse(r.stdout) as { message: string; code: string; pkg: string; cause: string };
      assertNamesPlatform(got.message, 'linux-arm64-musl');
      assert.equal(got.code, 'BATON_ADDON_MISSING');
      assert.equal(got.pkg, '@baton-lock/linux-arm64-musl');
      assert.match(got.message, /which is not installed: Cannot find module '@baton-lock\/linux-arm64-musl'/);
      assert.ok(got.message.includes(join(NATIVE, 'baton.linux-arm64-musl.node')), got.message);
      assert.match(got.cause, /Cannot find module '@baton-lock\/linux-arm64-musl'/);
    }
  });
});
