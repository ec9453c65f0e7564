// The Node holder through CommonJS: `require` of the installed package (holder-core.cjs does the work).
'use strict';
const baton = require('baton-lock');
const { run } = require('./holder-core.cjs');

run(baton, process.argv.slice(2)).catch((e) => {
  console.error(e);
  process.exit(1);
});
