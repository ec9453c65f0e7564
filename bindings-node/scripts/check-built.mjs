// prepack: the package carries the compiled facade, the loader and the addon's typings,
// so refuse to pack without them. (The addon itself ships in the platform packages
// @baton-lock/<platform>: scripts/npm-dist.mjs packs both.)
import { existsSync } from 'node:fs';

const missing = [];
if (!existsSync('dist/index.js') || !existsSync('dist/index.d.ts')) missing.push('dist/ (tsc)');
if (!existsSync('native/native.d.ts')) missing.push('native/native.d.ts (napi build)');
if (missing.length) {
  console.error(`baton: not built (${missing.join(', ')} missing): run \`npm run build\` first`);
  process.exit(1);
}
