#!/usr/bin/env node
// The CLI runs src/ compiled into dist/, brought up to date on every start (see compile.js:
// no build step to forget, and none of tsx's memory in a model server). Where dist/ cannot be
// written, it runs the TypeScript sources through tsx, as the tests do.
import { compileSources } from "./compile.js";

const compiled = await compileSources();
if (compiled) {
  await import(compiled);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
