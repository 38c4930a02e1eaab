import { WorkerPool } from "../engines/worker/WorkerPool.js";
import type { DocumentHints } from "./detectDocumentType.js";
import type { DocumentTask, DocumentTaskResult, HtmlTask, HtmlTaskResult } from "./documentWorker.js";
import { DocumentTextTooLongError, DocumentTooLargeError, UnreadableDocumentError, UnsupportedDocumentError } from "./errors.js";
import type { DocumentLimits, ExtractedDocument } from "./extractDocument.js";
import type { ReadableHtml } from "./readHtml.js";
import { siblingModule } from "../engines/worker/siblingModule.js";

const WORKER = siblingModule(import.meta.url, "documentWorker");

/**
 * extractDocument in a worker thread: parsing a large PDF or spreadsheet never holds the event
 * loop. One process-wide thread, started on first use and never keeping the process alive;
 * documents wait their turn for it (503 past 16 waiting). Throws the same document errors as
 * extractDocument.
 */
export async function extractDocumentOffThread(data: Buffer, hints: DocumentHints, limits: DocumentLimits, signal?: AbortSignal): Promise<ExtractedDocument> {
  const pool = await documentPool();
  const task: DocumentTask = { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), hints, limits };
  const { result } = await pool.run<DocumentTaskResult>(task, { signal });
  if (result.ok) return result.document;
  const { error } = result;
  if (error.kind === "unsupported") throw new UnsupportedDocumentError(error.described);
  if (error.kind === "tooLarge") throw new DocumentTooLargeError(error.type, error.limitBytes);
  if (error.kind === "textTooLong") throw new DocumentTextTooLongError(error.maxChars, error.length);
  throw new UnreadableDocumentError(error.type, error.reason);
}

/** readHtml in the same worker thread: a scraped page's tree and article (about 0.5 s a megabyte) are built away from the event loop. */
export async function readHtmlOffThread(html: string, options: { charThreshold?: number } = {}, signal?: AbortSignal): Promise<ReadableHtml> {
  const pool = await documentPool();
  const task: HtmlTask = { html, charThreshold: options.charThreshold };
  const { result } = await pool.run<HtmlTaskResult>(task, { signal });
  return result.page;
}

function documentPool(): Promise<WorkerPool> {
  shared ??= WorkerPool.start({ name: "document extraction", entry: WORKER, data: null, size: 1, maxWaiting: 16, unref: true }).catch((error: unknown) => {
    shared = undefined;
    throw error;
  });
  return shared;
}

let shared: Promise<WorkerPool> | undefined;
