// Import rules for src/ (npm run deps:check). Each rule says which layer may not reach which, and why.
// Type-only imports (`import type`) count for every layering rule: a store that names an API type
// still depends on the API. The cycle rule follows dependency-cruiser's convention and counts them
// too (viaOnly is not narrowed), so a cycle made only of type imports is reported as well.
/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A cycle makes load order matter and the modules impossible to understand (or test) one at a time.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "fixtures-only-from-fixture-code",
      severity: "error",
      comment:
        "src/fixtures generates the tiny demo and test models. Only the fixtures command and the server's demo-model " +
        "bootstrap may use it; an engine that imports it ships test scaffolding into the serving path.",
      from: { path: "^src/", pathNot: ["^src/fixtures/", "^src/cli/fixtures\\.ts$", "^src/server\\.ts$"] },
      to: { path: "^src/fixtures/" },
    },
    {
      name: "src-not-to-test-or-scripts",
      severity: "error",
      comment: "The product cannot depend on its tests or on the benchmark and fuzz scripts.",
      from: { path: "^src/" },
      to: { path: "^(test|scripts)/" },
    },
    {
      name: "store-below-billing-api-engines",
      severity: "error",
      comment: "src/store is the bottom layer (SQLite): billing, the HTTP API and the engines build on it, never the reverse.",
      from: { path: "^src/store/" },
      to: { path: "^src/(billing|api|engines)/" },
    },
    {
      name: "engines-know-no-http",
      severity: "error",
      comment: "Engines wrap native libraries behind small interfaces and know nothing about the HTTP API.",
      from: { path: "^src/engines/" },
      to: { path: "^src/api/" },
    },
    {
      name: "cli-not-to-api",
      severity: "error",
      comment: "CLI commands work on the store and the services below the API, not on HTTP route modules.",
      from: { path: "^src/cli/" },
      to: { path: "^src/api/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports are part of the graph: see the note at the top.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // The console's web source has its own tsconfig and a committed vite build.
    exclude: { path: "^src/console/(web|dist)/" },
    // Sources import each other with .js suffixes (NodeNext); the files are .ts.
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js"] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
