// Prints, space-separated (cluster URLs hold commas), the store URLs of the environment's BATON_TEST_*_URL variables
// (written by scripts/services) whose scheme this build of the package supports; says on
// stderr which it leaves out and why, and fails when a listed server cannot be reached.
// scripts/suites/50-node.sh passes the list to the tests as BATON_TEST_URLS, as the
// Python suite's conftest does for its own run.

import { connect } from 'baton-lock';

const found = [];
for (const [key, url] of Object.entries(process.env).sort()) {
  if (!/^BATON_TEST_\w+_URL$/.test(key) || !url) continue;
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
