// The browser tests of the wasm packages, in headless Chromium through ChromeDriver (its
// HTTP API, with Node's fetch: no npm dependency). Serves wasm/ on 127.0.0.1 and opens:
//
//   test/api.html        the JavaScript API on memory:// and on etcd+http:// (window.__result)
//   /readme.html         wasm/README.md's quick start page, as a person would copy it
//   demo/index.html      the flash-sale demo: without a lock it oversells, with one it does
//                        not (read from the DOM); a screenshot goes to target/wasm-demo.png
//   test/hold.html       cross-runtime: a lock held in the page makes the native
//                        `baton run --url etcd+http://…` wait, and the other way round
//
// and runs the Node package (wasm/pkg-node) on the Node README's quick start.
//
//   node wasm/test/run.mjs     env: BATON_TEST_ETCD_HTTP_URL (etcd+http://…), BATON_BIN
//                              (the native CLI), CHROMEDRIVER, CHROMIUM, BATON_PORT_RANGE
// Prints one line per check and closes with "N passed, N failed".

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const WASM = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = resolve(WASM, '..');
const ETCD = process.env.BATON_TEST_ETCD_HTTP_URL ?? 'etcd+http://127.0.0.1:2379';
const BATON = process.env.BATON_BIN ?? join(ROOT, 'target/debug/baton');
const CHROMEDRIVER = process.env.CHROMEDRIVER ?? '/usr/bin/chromedriver';
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const [LOW, HIGH] = (process.env.BATON_PORT_RANGE ?? '31000-31999').split('-').map(Number);

let passed = 0;
let failed = 0;
function report(ok, what, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free port in BATON_PORT_RANGE (bounded tries). */
async function freePort() {
  for (let i = 0; i < 50; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
    const ok = await new Promise((res) => {
      const s = createServer().once('error', () => res(false));
      s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
    });
    if (ok) return port;
  }
  throw new Error(`no free port in ${LOW}-${HIGH}`);
}

// ── the static server: wasm/, plus the pages of wasm/README.md's samples ──
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
  '.css': 'text/css', '.json': 'application/json', '.ts': 'text/plain', '.png': 'image/png' };

/** wasm/README.md's quick start: the html block after the marker comment. */
export function readmeSample() {
  const readme = readFileSync(join(WASM, 'README.md'), 'utf8');
  const m = readme.match(/<!-- wasm-browser-sample -->\s*```html\n([\s\S]*?)```/);
  if (!m) throw new Error('wasm/README.md has no wasm-browser-sample html block');
  return m[1];
}

/** wasm/README.md's `## Use` sample, in a page that reports its end (or its error). */
function wasmReadmeSample() {
  const readme = readFileSync(join(WASM, 'README.md'), 'utf8');
  const js = readme.split('## Use')[1].match(/```js\n([\s\S]*?)```/)[1].replaceAll("'etcd+http://127.0.0.1:2379'", JSON.stringify(ETCD));
  return `<!doctype html><script type="module">
window.onunhandledrejection = (e) => { window.__sample = 'error: ' + (e.reason?.stack ?? e.reason); };
${js}
window.__sample = 'done';
</script>`;
}

async function serve() {
  const port = await freePort();
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (path === '/readme.html' || path === '/wasm-readme.html') {
      const page = path === '/readme.html' ? readmeSample() : wasmReadmeSample();
      res.writeHead(200, { 'content-type': 'text/html' }).end(page);
      return;
    }
    const file = normalize(join(WASM, path.endsWith('/') ? `${path}index.html` : path));
    if (!file.startsWith(WASM)) return res.writeHead(403).end();
    try {
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { server, base: `http://127.0.0.1:${port}` };
}

// ── ChromeDriver over HTTP ──
async function webdriver() {
  const port = await freePort();
  const proc = spawn(CHROMEDRIVER, [`--port=${port}`, '--allowed-ips=127.0.0.1'], { stdio: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      if ((await (await fetch(`${base}/status`)).json()).value?.ready) break;
    } catch {}
    await sleep(100);
  }
  const profile = mkdtempSync(join(tmpdir(), 'baton-wasm-chromium-'));
  const caps = { capabilities: { alwaysMatch: { browserName: 'chrome', 'goog:chromeOptions': { binary: CHROMIUM,
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic',
      '--window-size=1100,900', `--user-data-dir=${profile}`] } } } };
  const created = await (await fetch(`${base}/session`, { method: 'POST', body: JSON.stringify(caps) })).json();
  const id = created.value?.sessionId;
  if (!id) throw new Error(`no ChromeDriver session: ${JSON.stringify(created)}`);
  const call = async (method, path, body) => {
    const r = await fetch(`${base}/session/${id}${path}`, { method, body: body && JSON.stringify(body) });
    const j = await r.json();
    if (!r.ok) throw new Error(`${path}: ${JSON.stringify(j.value)}`);
    return j.value;
  };
  return {
    open: (url) => call('POST', '/url', { url }),
    exec: (script, ...args) => call('POST', '/execute/sync', { script, args }),
    screenshot: async () => Buffer.from(await call('GET', '/screenshot'), 'base64'),
    /** Polls `expr` (a JS expression) until it is non-null, at most `ms`. */
    async until(expr, ms) {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        const v = await call('POST', '/execute/sync', { script: `return (${expr}) ?? null;`, args: [] });
        if (v !== null) return v;
        await sleep(200);
      }
      throw new Error(`timed out after ${ms} ms waiting for ${expr}`);
    },
    async quit() {
      await fetch(`${base}/session/${id}`, { method: 'DELETE' }).catch(() => {});
      proc.kill();
    },
  };
}

// ── the checks ──
async function apiPage(b, base, url) {
  await b.open(`${base}/test/api.html?url=${encodeURIComponent(url)}`);
  const r = await b.until('window.__result', 120_000);
  report(r.failed === 0 && r.passed > 0, `JavaScript API on ${url} (${r.passed} checks)`, r.failures.join('\n     '));
}

async function readmePage(b, base) {
  await b.open(`${base}/readme.html`);
  const text = await b.until("document.querySelector('#out')?.dataset.done && document.querySelector('#out').textContent", 60_000);
  report(/token \d+/.test(text) && /released/.test(text), 'wasm/README.md quick start page', text.trim().replace(/\n/g, ' | '));
}

async function wasmReadmePage(b, base) {
  await b.open(`${base}/wasm-readme.html`);
  const r = await b.until('window.__sample', 60_000);
  report(r === 'done', 'wasm/README.md sample', r);
}

async function demoPage(b, base, url) {
  await b.open(`${base}/demo/index.html`);
  await b.until("document.querySelector('#run-unlocked')", 10_000);
  await b.exec("document.querySelector('#url').value = arguments[0];", url);
  const run = async (button) => {
    await b.exec(`document.querySelector('${button}').click();`);
    return b.until("document.body.dataset.state === 'done' ? JSON.parse(document.body.dataset.outcome) : null", 120_000);
  };
  const unlocked = await run('#run-unlocked');
  report(unlocked.sold > unlocked.stock, `demo on ${url}: without a lock it oversells`, `${unlocked.sold} sold of ${unlocked.stock}`);
  const locked = await run('#run-locked');
  const grows = locked.tokens.every((t, i) => i === 0 || BigInt(t) > BigInt(locked.tokens[i - 1]));
  report(locked.sold === locked.stock && locked.tokens.length === locked.buyers && grows,
    `demo on ${url}: with a lock it does not, tokens grow`, `${locked.sold} sold of ${locked.stock}, tokens ${locked.tokens.join(',')}`);
  mkdirSync(join(ROOT, 'target'), { recursive: true });
  const png = join(ROOT, 'target/wasm-demo.png');
  writeFileSync(png, await b.screenshot());
  console.log(`     screenshot: ${png}`);
}

/** `baton run` on NAME; resolves with its exit code, output and time. */
function batonRun(name, seconds, waitS) {
  const t0 = Date.now();
  const p = spawn(BATON, ['run', '--url', ETCD, '--wait', `${waitS}s`, name, '--',
    'sh', '-c', `echo "token=$BATON_FENCING_TOKEN"; sleep ${seconds}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (out += d));
  return new Promise((res) => p.on('close', (code) => res({ code, out, ms: Date.now() - t0 })));
}

async function crossRuntime(b, base) {
  const name = `wasm-cross/${Date.now().toString(36)}`;
  // The page holds; the native CLI waits until the page releases.
  await b.open(`${base}/test/hold.html?url=${encodeURIComponent(ETCD)}&name=${encodeURIComponent(name)}`);
  const held = await b.until('window.__held', 30_000);
  const native = batonRun(name, 0, 60);
  await sleep(2500);
  await b.exec('window.__release();');
  const n = await native;
  const nativeToken = BigInt(n.out.match(/token=(\d+)/)?.[1] ?? -1);
  report(n.code === 0 && n.ms >= 2000 && nativeToken > BigInt(held.token),
    'browser holds → native `baton run` waits', `waited ${n.ms} ms, page token ${held.token}, native token ${nativeToken}`);
  // The native CLI holds for 3 s; the page waits.
  const holding = batonRun(name, 3, 30);
  await sleep(1000);
  await b.open(`${base}/test/hold.html?url=${encodeURIComponent(ETCD)}&name=${encodeURIComponent(name)}&wait=1`);
  const got = await b.until('window.__held', 60_000);
  const h = await holding;
  const token = BigInt(h.out.match(/token=(\d+)/)?.[1] ?? -1);
  await b.exec('window.__release();');
  report(h.code === 0 && got.waitedMs >= 1000 && BigInt(got.token) > token,
    'native `baton run` holds → the browser waits', `waited ${got.waitedMs} ms, native token ${token}, page token ${got.token}`);
}

function nodeSample(url) {
  const readme = readFileSync(join(ROOT, 'bindings-node/README.md'), 'utf8');
  const sample = readme.split('## Quick start')[1].match(/```js\n([\s\S]*?)```/)[1];
  const pkg = join(WASM, 'pkg-node/index.js');
  // On the shared etcd, under a prefix of this run (`?prefix=`): the sample's names are plain.
  const store = url === 'memory://' ? 'memory://quickstart' : `${url}${url.includes('?') ? '&' : '?'}prefix=wasm-node-${Date.now().toString(36)}/`;
  const code = sample.replace(/from 'baton(-lock)?'/, `from ${JSON.stringify(pkg)}`).replace(/'memory:\/\/quickstart'/, JSON.stringify(store));
  const dir = mkdtempSync(join(tmpdir(), 'baton-wasm-node-'));
  writeFileSync(join(dir, 'sample.mjs'), code);
  const r = spawnSync(process.execPath, [join(dir, 'sample.mjs')], { encoding: 'utf8', timeout: 60_000 });
  const expected = [/held orders\/42 with token \d+/, /busy: true/, /timed out, as expected/, /aborted: TimeoutError/, /free permits: 1/];
  report(r.status === 0 && expected.every((re) => re.test(r.stdout)), `Node package: the Node quick start on ${url}`,
    r.status === 0 ? r.stdout.trim().split('\n').length + ' lines' : `${r.stdout}\n${r.stderr}`);
}

/**
 * Not a check: `baton bench`'s uncontended and hand-off scenarios in the page and in the
 * native CLI (BATON_BIN: build it in release for figures) on the same store, in
 * alternating rounds (BATON_BENCH_ROUNDS, default 3), printed for BENCHMARKS.md as the
 * median of each side and of the per-round ratios (browser / native, p50).
 */
async function benchPage(b, base, url) {
  const rounds = Number(process.env.BATON_BENCH_ROUNDS ?? 3);
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const rows = [];
  for (let i = 0; i < rounds; i++) {
    await b.open(`${base}/test/bench.html?url=${encodeURIComponent(url)}`);
    const web = await b.until('window.__bench', 120_000);
    const nat = spawnSync(BATON, ['bench', '--url', url, '--json', '--iterations', '2000', '--duration', '3s'],
      { encoding: 'utf8', timeout: 120_000 });
    if (nat.status !== 0) throw new Error(`baton bench: ${nat.stderr}`);
    const sc = Object.fromEntries(JSON.parse(nat.stdout).scenarios.map((x) => [x.name, x]));
    const row = { load: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
      web: { p50: web.uncontended.p50, ops: web.uncontended.opsPerS, handoff: web.handoff.p50,
        requests: web.uncontended.requestsPerCycle, fetch: web.bareFetch?.p50 ?? NaN },
      native: { p50: sc.uncontended_1.p50_us / 1000, ops: sc.uncontended_1.ops_per_sec, handoff: sc.handoff.p50_us / 1000 } };
    rows.push(row);
    console.log(`bench round ${i + 1} (load ${row.load}): ${JSON.stringify(row)}`);
  }
  const ms = (x) => `${x.toFixed(2)} ms`;
  const side = (k, f) => median(rows.map((r) => r[k][f]));
  const ratio = (f) => median(rows.map((r) => r.web[f] / r.native[f]));
  console.log(`bench ${url}, ${rounds} rounds, load ${Math.min(...rows.map((r) => r.load))}–${Math.max(...rows.map((r) => r.load))}:`);
  console.log(`| acquire+release, 1 task, p50 | ${ms(side('web', 'p50'))} (${Math.round(side('web', 'ops'))} ops/s) | ` +
    `${ms(side('native', 'p50'))} (${Math.round(side('native', 'ops'))} ops/s) | ×${ratio('p50').toFixed(2)} |`);
  console.log(`| hand-off p50 | ${ms(side('web', 'handoff'))} | ${ms(side('native', 'handoff'))} | ×${ratio('handoff').toFixed(2)} |`);
  console.log(`the page's floor: ${side('web', 'requests')} requests a cycle; one bare fetch() to the gateway, p50 ` +
    `${ms(side('web', 'fetch'))}: ${ms(side('web', 'requests') * side('web', 'fetch'))} a cycle`);
}

const only = process.argv.slice(2);
const want = (k) => (only.length === 0 && k !== 'bench') || only.includes(k);
const { server, base } = await serve();
const b = await webdriver();
try {
  for (const [k, fn] of [
    ['api', async () => { await apiPage(b, base, 'memory://api'); await apiPage(b, base, ETCD); }],
    ['readme', async () => { await readmePage(b, base); await wasmReadmePage(b, base); }],
    ['demo', async () => { await demoPage(b, base, 'memory://demo'); await demoPage(b, base, ETCD); }],
    ['cross', () => crossRuntime(b, base)],
    ['node', async () => { nodeSample('memory://'); nodeSample(ETCD); }],
    ['bench', () => benchPage(b, base, ETCD)],
  ]) {
    if (!want(k)) continue;
    try {
      await fn();
    } catch (e) {
      report(false, k, e?.stack ?? String(e));
    }
  }
} finally {
  await b.quit();
  server.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && (passed > 0 || only.join() === 'bench') ? 0 : 1);
