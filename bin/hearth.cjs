#!/usr/bin/env node
"use strict";
// The CLI's entry point. CommonJS, because this is the one moment libuv's thread pool can still be
// sized: it starts with the first file an ES module loader reads. It sizes the pool for a server
// (libuvPool.cjs), then runs the CLI (hearth.js). Before that, a server may start again with glibc's
// allocator settings (glibcMalloc.cjs): first, so the new process sizes its own pool.
require("./glibcMalloc.cjs").settleMalloc(process.argv.slice(2));
require("./libuvPool.cjs").sizeLibuvPool(process.argv.slice(2));
// Node 22.1+ keeps the code it compiles for the modules a start reads (its compile cache, in the
// system's temporary directory unless NODE_COMPILE_CACHE names one): about 0.1 s off a 1.2 s
// start of `hearth serve`. Node 20 has none; where the directory cannot be written it stays off.
require("node:module").enableCompileCache?.();
// onnxruntime's telemetry stays off in every command (src/engines/onnx/onnxRuntimeOffline.ts says
// what it would collect); set before anything can load onnxruntime.
process.env.ORT_DISABLE_TELEMETRY ??= "1";

import("./hearth.js").catch((error) => {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
});
