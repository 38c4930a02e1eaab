// Entry of every engine worker thread. Hearth runs its TypeScript sources through tsx, and a
// worker thread does not inherit the parent's loader hooks: register tsx here, then load the
// worker module named by the pool (workerData.entry).
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
await import(workerData.entry);
