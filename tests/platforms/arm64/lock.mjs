// Inside the arm64 root (tests/platforms, scripts/suites/70-platforms.sh): the installed
// baton-lock (main package + @baton-lock/linux-arm64-gnu) takes a lock on each store URL
// given, twice, under emulation.
//
//     node lock.mjs URL…
//
// For each URL: the process is arm64, a held lock is busy for a second handle, and the
// next grant's fencing token is above the first. Any failure exits non-zero.
import { connect } from 'baton-lock';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';

if (process.arch !== 'arm64') throw new Error(`not arm64: ${process.arch}`);
for (const url of process.argv.slice(2)) {
  const client = await connect(url);
  const name = `platforms/arm64-node/${hostname()}`;
  const guard = await client.lock(name).acquire({ timeoutMs: 30_000 });
  const first = guard.token;
  if ((await client.lock(name).tryAcquire()) !== null) throw new Error('a held lock was granted to a second handle');
  await guard.release();
  const next = await client.lock(name).acquire({ timeoutMs: 30_000 });
  if (!(next.token > first)) throw new Error(`tokens did not rise: ${first} then ${next.token}`);
  await next.release();
  await client.close();
  console.log(`node ${process.version} ${process.arch}: ${url.split(':')[0]} lock: tokens ${first}, ${next.token}`);
}
const require = createRequire(import.meta.url);
console.log(`node: addon from ${require.resolve('@baton-lock/linux-arm64-gnu')}`);
