// Entry of every engine worker thread. A worker thread does not inherit the parent's loader
// hooks: when the worker module is TypeScript (tests, or a CLI that could not compile dist/),
// register tsx here first; a compiled .js module loads as it is.
import { workerData } from "node:worker_threads";

if (/\.[mc]?ts$/.test(new URL(workerData.entry).pathname)) {
  const { register } = await import("tsx/esm/api");
  register();
}
await import(workerData.entry);
