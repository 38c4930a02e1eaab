#!/usr/bin/env node
"use strict";
// The CLI's entry point. CommonJS, because this is the one moment libuv's thread pool can still be
// sized: it starts with the first file an ES module loader reads. It sizes the pool for a server
// (libuvPool.cjs), then runs the CLI (hearth.js).
const { chooseLibuvPool, linuxGpuDevices } = require("./libuvPool.cjs");

const choice = chooseLibuvPool({ argv: process.argv.slice(2), env: process.env, platform: process.platform, gpuDevices: () => linuxGpuDevices() });
if (choice) {
  process.env.UV_THREADPOOL_SIZE = String(choice.size);
  // For the server's start-up log: why the pool has this size (the variable alone means the operator set it).
  process.env.HEARTH_LIBUV_POOL_REASON = choice.reason;
} else {
  delete process.env.HEARTH_LIBUV_POOL_REASON;
}

import("./hearth.js").catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
