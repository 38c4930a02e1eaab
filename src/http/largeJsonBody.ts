import type { IncomingMessage } from "node:http";
import { siblingModule } from "../engines/worker/siblingModule.js";
import { WorkerPool } from "../engines/worker/WorkerPool.js";
import type { JsonBodyResult, JsonBodyTask } from "./jsonBodyWorker.js";
import type { JsonShapeLimits } from "./jsonShape.js";
import { readWholeBody } from "./readWholeBody.js";

/**
 * Bodies from this size on are parsed on a worker thread. On the event loop, a 33 MB body (a
 * 25 MB picture as a data URL) held it about 350 ms: Buffer.concat, decoding to a string (125
 * ms) and JSON.parse (130 ms) on the 2-core host. Here the body's pieces are joined in slices
 * and handed over; what comes back is the parsed value (its one large string copied once).
 */
export const OFF_THREAD_FROM_BYTES = 1024 * 1024;

/** Whether a body is parsed off the event loop: JSON in UTF-8 whose announced length is large. */
export function parsesOffThread(req: IncomingMessage): boolean {
  const length = Number(req.headers["content-length"]);
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers["content-type"] ?? "")?.[1];
  return Number.isFinite(length) && length >= OFF_THREAD_FROM_BYTES && (charset === undefined || /^utf-?8$/i.test(charset));
}

/** Reads and parses a large JSON body on the worker thread; rejects as readWholeBody does (413, 415, 400), or when the pool is full (503). */
export async function parseLargeJsonBody(req: IncomingMessage, limit: number, shape: JsonShapeLimits): Promise<JsonBodyResult> {
  const bytes = await readWholeBody(req, limit);
  const pool = await jsonPool();
  // A buffer this large owns its whole ArrayBuffer (Node's shared pool is for small ones), so it
  // can be transferred; were it ever a view into a larger one, a copy goes instead.
  const owned = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength;
  const view = owned ? new Uint8Array(bytes.buffer) : new Uint8Array(bytes);
  const { result } = await pool.run<JsonBodyResult>({ bytes: view, shape } satisfies JsonBodyTask, { transfer: [view.buffer as ArrayBuffer] });
  return result;
}

const WORKER = siblingModule(import.meta.url, "jsonBodyWorker");

let shared: Promise<WorkerPool> | undefined;

function jsonPool(): Promise<WorkerPool> {
  shared ??= WorkerPool.start({ name: "JSON bodies", entry: WORKER, data: null, size: 1, maxWaiting: 64, unref: true }).catch((error: unknown) => {
    shared = undefined;
    throw error;
  });
  return shared;
}
