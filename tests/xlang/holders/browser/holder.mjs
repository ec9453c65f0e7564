// A browser holder: headless Chromium opens holder.html, which loads the wasm package
// (wasm/pkg, as a page imports it) and takes one name `n` times over etcd's JSON gateway
// (etcd+http://). A page cannot read CLOCK_MONOTONIC, so it posts each event here and
// waits for the answer: this process stamps the event (process.hrtime, the clock of the
// other holders) and appends it to the history before answering. So a `grant` is stamped
// after the acquire returned and a `release` before the page releases, as in every holder.
//
//   node holder.mjs url=etcd+http://… name=… kind=lock|read|write|permit id=browser0 n=3 \
//       hold_ms=40 history=… [permits=2]
//   env: BATON_XLANG_WASM_PKG (default: wasm/pkg of this checkout), CHROMIUM
//
// Chromium is started directly (no ChromeDriver): the page reports its end, or its error,
// to /done, and this process then stops it. Exits non-zero on any error of the page.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const PKG = resolve(process.env.BATON_XLANG_WASM_PKG ?? join(HERE, '../../../../wasm/pkg'));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const RUN_MS = 140_000; // the whole run: below holders.py's bound for one holder process
const GO_MS = 120_000; // the barrier, as the other holders'

const a = Object.fromEntries(process.argv.slice(2).map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)]));
for (const k of ['url', 'name', 'id', 'history']) if (!a[k]) throw new Error(`holder.mjs: ${k}= is required`);
if (!existsSync(join(PKG, 'baton_wasm.js'))) throw new Error(`no wasm package in ${PKG}: run scripts/package wasm`);
const kind = a.kind ?? 'lock';
const ev = { id: a.id, lang: 'browser', via: 'baton', mode: kind };

function record(event) {
  const line = JSON.stringify({ t: 0, ...event, ...ev }).replace('"t":0', `"t":${process.hrtime.bigint()}`);
  appendFileSync(a.history, `${line}\n`);
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
let finish;
const done = new Promise((r) => (finish = r));
const body = (req) => new Promise((r) => { let s = ''; req.on('data', (d) => (s += d)); req.on('end', () => r(s)); });

const server = createServer(async (req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  try {
    if (req.method === 'POST' && path === '/event') {
      const e = JSON.parse(await body(req));
      if (!['ready', 'ask', 'grant', 'release'].includes(e.ev)) throw new Error(`unknown event ${e.ev}`);
      record(e);
      return res.writeHead(204).end();
    }
    if (req.method === 'POST' && path === '/done') {
      finish(await body(req));
      return res.writeHead(204).end();
    }
    if (path === '/go') return res.writeHead(200, { 'content-type': 'application/json' }).end(String(existsSync(`${a.history}.go`)));
    if (path === '/holder.html') return res.writeHead(200, { 'content-type': 'text/html' }).end(readFileSync(join(HERE, 'holder.html')));
    const file = normalize(join(PKG, path.replace(/^\/pkg\//, '/')));
    if (!path.startsWith('/pkg/') || !file.startsWith(PKG)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  } catch (e) {
    res.writeHead(500).end(String(e?.message ?? e));
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const page = new URL(`http://127.0.0.1:${server.address().port}/holder.html`);
for (const k of ['url', 'name', 'n', 'hold_ms', 'permits']) if (a[k] !== undefined) page.searchParams.set(k, a[k]);
page.searchParams.set('kind', kind);
page.searchParams.set('go_ms', String(GO_MS));

const profile = mkdtempSync(join(tmpdir(), 'baton-xlang-chromium-'));
const chromium = spawn(CHROMIUM, ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
  '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-quic', '--disable-breakpad', '--disable-crash-reporter', `--user-data-dir=${profile}`, page.href], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
let stderr = '';
chromium.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
const exit = new Promise((r) => chromium.on('exit', r));
const exited = exit.then((code) => `chromium exited (${code}) before the page ended:\n${stderr}`);
let timer;
const timeout = new Promise((r) => (timer = setTimeout(() => r(`the page did not end within ${RUN_MS} ms`), RUN_MS)));
const outcome = await Promise.race([done, exited, timeout]);
clearTimeout(timer);
// Its own process group (detached): the renderer and the other helpers go with it.
try {
  process.kill(-chromium.pid, 'SIGKILL');
} catch {}
await exit;
server.close();
rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
if (outcome !== 'ok') {
  console.error(`browser holder ${a.id}: ${outcome}`);
  process.exit(1);
}
