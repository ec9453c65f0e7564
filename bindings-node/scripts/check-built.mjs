// prepack: the tarball carries the built addon and facade, so refuse to pack without them.
import { existsSync, readdirSync } from 'node:fs';

const missing = [];
if (!existsSync('dist/index.js') || !existsSync('dist/index.d.ts')) missing.push('dist/ (tsc)');
if (!existsSync('native/native.js') || !readdirSync('native').some((f) => f.endsWith('.node'))) {
  missing.push('native/*.node (napi build)');
}
if (missing.length) {
  console.error(`baton: not built (${missing.join(', ')} missing): run \`npm run build\` first`);
  process.exit(1);
}
