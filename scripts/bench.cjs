#!/usr/bin/env node
"use strict";
// `npm run bench`'s entry. CommonJS, like bin/hearth.cjs: it sizes libuv's thread pool as
// `hearth serve` does (bin/libuvPool.cjs) before anything starts the pool, so that the in-process
// targets and the server the bench starts in its own process decode as a served Hearth does.
// Then it runs bench.ts through tsx.
require("../bin/libuvPool.cjs").sizeLibuvPool(["serve"]);

import("tsx/esm/api")
  .then(({ register }) => {
    register();
    return import("./bench.ts");
  })
  .catch((error) => {
    // fetch's own message ("fetch failed") says nothing; the socket error is its cause.
    process.stderr.write(`${error?.stack ?? error}\n${error?.cause ? `cause: ${error.cause.stack ?? error.cause}\n` : ""}`);
    process.exit(1);
  });
