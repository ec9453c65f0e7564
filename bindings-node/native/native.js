'use strict';
// The loader of the napi addon (committed: `napi build` here makes native.d.ts and the
// .node file, not this file). It loads native/baton.<platform>.node when a local build is
// there (`npm run build`), else the platform's package @baton-lock/<platform>; on a
// platform with neither it throws an Error naming the platform, the missing package, the
// load errors, and how to build from source (platform.js). BATON_NODE_PLATFORM=NAME
// overrides the detected platform name (e.g. linux-x64-musl where detection guesses wrong).

module.exports = require('./platform.js').loadAddon().binding;
