import { WorkerPool } from "../engines/worker/WorkerPool.js";
import type { DocumentHints } from "./detectDocumentType.js";
import type { DocumentTask, DocumentTaskResult } from "./documentWorker.js";
import { DocumentTextTooLongError, DocumentTooLargeError, UnreadableDocumentError, UnsupportedDocumentError } from "./errors.js";
import type { DocumentLimits, ExtractedDocument } from "./extractDocument.js";
import { siblingModule } from "../engines/worker/siblingModule.js";

const WORKER = siblingModule(import.meta.url, "documentWorker");

/**
 * extractDocument in a worker thread: parsing a large PDF or spreadsheet never holds the event
 * loop. One process-wide thread, started on first use and never keeping the process alive;
 * documents wait their turn for it (503 past 16 waiting). Throws the same document errors as
 * extractDocument.
 */
export async function extractDocumentOffThread(data: Buffer, hints: DocumentHints, limits: DocumentLimits, signal?: AbortSignal): Promise<ExtractedDocument> {
  shared ??= WorkerPool.start({ name: "document extraction", entry: WORKER, data: null, size: 1, maxWaiting: 16, unref: true }).catch((error: unknown) => {
    shared = undefined;
    throw error;
  });
  const pool = await shared;
  const task: DocumentTask = { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), hints, limits };
  const { result } = await pool.run<DocumentTaskResult>(task, { signal });
  if (result.ok) return result.document;
  const { error } = result;
  if (error.kind === "unsupported") throw new UnsupportedDocumentError(error.described);
  if (error.kind === "tooLarge") throw new DocumentTooLargeError(error.type, error.limitBytes);
  if (error.kind === "textTooLong") throw new DocumentTextTooLongError(error.maxChars, error.length);
  throw new UnreadableDocumentError(error.type, error.reason);
}

let shared: Promise<WorkerPool> | undefined;
