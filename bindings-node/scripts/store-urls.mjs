// Prints, space-separated (cluster URLs hold commas), the store URLs of the environment's
// BATON_TEST_*_URL variables (written by scripts/services) whose scheme this build of the
// package supports; says on stderr which it leaves out and why, and fails when a listed
// server cannot be reached.
//
//   node scripts/store-urls.mjs [main|variants]
//
// `main` (the default): every URL but the variants that BATON_TEST_VARIANTS names (another
// topology, transport or TLS of a store another URL reaches; the core's behaviour suite
// runs every check on each); `variants`: those. BATON_TEST_EVERY_STORE=1 makes every URL
// a main one. scripts/suites/50-node.sh passes the lists to the tests as BATON_TEST_URLS
// and BATON_TEST_VARIANT_URLS, as the Python suite's conftest splits its own.

import { connect } from 'baton-lock';

const want = process.argv[2] ?? 'main';
if (want !== 'main' && want !== 'variants') throw new Error(`usage: store-urls.mjs [main|variants], not ${want}`);
const every = !['', '0'].includes(process.env.BATON_TEST_EVERY_STORE ?? '');
const variants = new Set(every ? [] : (process.env.BATON_TEST_VARIANTS ?? '').split(/\s+/).filter(Boolean));

const found = [];
for (const [key, url] of Object.entries(process.env).sort()) {
  const m = /^BATON_TEST_(\w+)_URL$/.exec(key);
  if (!m || !url || variants.has(m[1]) !== (want === 'variants')) continue;
  try {
    const client = await connect(url);
    await client.close();
    found.push(url);
  } catch (e) {
    // Only a store this build lacks is left out: a listed server that fails is a failure.
    if (e.code !== 'Unsupported') throw e;
    console.error(`left out ${key}: ${e.message}`);
  }
}
console.log(found.join(' '));
