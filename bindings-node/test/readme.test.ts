// The package README's samples (what npm shows): the ```js quick start runs as written, the
// ```ts sample of "`await using`" type-checks and runs after tsc (its `await using`
// down-levelled for Node 20), and so do the other sections' ```js samples.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const PACKAGE = join(__dirname, '..');
const README = join(PACKAGE, 'README.md');

/** The first fenced block of `lang` in the README's section titled `heading`. */
function sample(heading: string, lang: string): string {
  const text = readFileSync(README, 'utf8');
  const start = text.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `README.md has a "## ${heading}" section`);
  const rest = text.slice(start + 1);
  const end = rest.indexOf('\n## ', 1);
  const section = end < 0 ? rest : rest.slice(0, end);
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)\\n```').exec(section);
  assert.ok(m, `the section has a \`\`\`${lang} block`);
  return m[1]!;
}

/** Runs a script from inside the package, where `import 'baton-lock'` resolves to it. */
function run(file: string): string {
  return execFileSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 });
}

describe('README samples', () => {
  it('the JavaScript sample runs', { timeout: 90_000 }, () => {
    const file = join(PACKAGE, 'dist-test', 'readme-sample.mjs');
    writeFileSync(file, sample('Quick start', 'js'));
    const out = run(file);
    assert.match(out, /held orders\/42 with token \d+/);
    assert.match(out, /busy: true/);
    assert.match(out, /timed out, as expected/);
    assert.match(out, /aborted: TimeoutError/);
    assert.match(out, /free permits: 1/);
  });

  it('the TypeScript sample type-checks and runs', { timeout: 120_000 }, () => {
    const src = join(PACKAGE, 'dist-test', 'readme-sample.mts');
    writeFileSync(src, sample('`await using`', 'ts'));
    const tsc = join(PACKAGE, 'node_modules', 'typescript', 'bin', 'tsc');
    const flags = ['--strict', '--target', 'ES2022', '--lib', 'ES2022,ESNext.Disposable'];
    execFileSync(process.execPath, [tsc, ...flags, '--module', 'node16', '--types', 'node', src], {
      encoding: 'utf8',
      timeout: 90_000,
    });
    assert.match(run(src.replace(/\.mts$/, '.mjs')), /^token \d+, lost: false$/m);
  });

  // The shorter samples of the other sections, each with what it prints.
  for (const [heading, expected] of [
    ['Errors', /^true InvalidUrl$/m],
    ['Cancellation', /^AbortError$/m],
    ['Worker threads and processes', /^(token \d+n\n){3}$/], // console.log prints a bigint as 12n
  ] as const) {
    it(`the sample of "${heading}" runs`, { timeout: 90_000 }, () => {
      const file = join(PACKAGE, 'dist-test', `readme-${heading.split(' ')[0]!.toLowerCase()}.mjs`);
      writeFileSync(file, sample(heading, 'js'));
      assert.match(run(file), expected);
    });
  }
});
