import type { ApiError } from "../../errors.js";

/** Messages between a WorkerPool (main thread) and serveWorker (worker thread). */

export type ToWorker = { type: "run"; id: number; task: unknown } | { type: "cancel"; id: number };

export type FromWorker =
  | { type: "ready"; info: unknown }
  | { type: "load-failed"; message: string }
  | { type: "event"; id: number; event: unknown }
  | { type: "done"; id: number; result: unknown }
  | { type: "failed"; id: number; name: string; message: string; clientError?: { status: number; extra: ApiError["extra"] } };

export interface WorkerBootData {
  /** file URL of the worker module. */
  entry: string;
  /** What the worker module's load() receives. */
  data: unknown;
}
