// The Node holder through ESM: `import` of the installed package (holder-core.cjs does the work).
import * as baton from 'baton-lock';
import core from './holder-core.cjs';

await core.run(baton, process.argv.slice(2));
