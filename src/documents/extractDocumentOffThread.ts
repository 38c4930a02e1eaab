import { copyInSlices } from "../engines/cooperativeWork.js";
import { TaskAbortedError, WorkerPool } from "../engines/worker/WorkerPool.js";
import { type DocumentHints, detectDocumentType } from "./detectDocumentType.js";
import type { DocumentTask, DocumentTaskResult, HtmlTask, HtmlTaskResult } from "./documentWorker.js";
import { DocumentTextTooLongError, DocumentTooLargeError, UnreadableDocumentError, UnsupportedDocumentError } from "./errors.js";
import { DOCUMENT_TYPE_NAMES, type DocumentLimits, type ExtractedDocument } from "./extractDocument.js";
import type { ReadableHtml } from "./readHtml.js";
import { siblingModule } from "../engines/worker/siblingModule.js";

const WORKER = siblingModule(import.meta.url, "documentWorker");

/**
 * extractDocument in a worker thread: parsing a large PDF or spreadsheet never holds the event
 * loop. One process-wide thread, started on first use and never keeping the process alive;
 * documents wait their turn for it (503 past 16 waiting), and none takes it for more than
 * `timeLimitMs` (an UnreadableDocumentError past it). Throws the same document errors as
 * extractDocument.
 */
export async function extractDocumentOffThread(
  data: Buffer,
  hints: DocumentHints,
  limits: DocumentLimits,
  signal?: AbortSignal,
  timeLimitMs = DOCUMENT_TIME_LIMIT_MS,
): Promise<ExtractedDocument> {
  const pool = await documentPool();
  // The worker gets a copy of its own, made in slices once it is free for the document (a
  // document waiting its turn holds no second copy) and transferred: posting the request's
  // buffer would copy it in one call (a 20 MB upload, about 0.1 s on the 2-core host).
  const handOver = async () => {
    const own = new Uint8Array(data.byteLength);
    await copyInSlices([data], own, signal);
    return { payload: { data: own, hints, limits } satisfies DocumentTask, transfer: [own.buffer] };
  };
  const { result } = await withTimeLimit(
    timeLimitMs,
    signal,
    (within) => pool.runWhenFree<DocumentTaskResult>(handOver, { signal: within }),
    () => {
      const type = detectDocumentType(data, hints);
      return new UnreadableDocumentError(type ? DOCUMENT_TYPE_NAMES[type] : "document", `reading it took more than ${timeLimitMs / 1000} s, the most this node spends on one file`);
    },
  );
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
  const { result } = await withTimeLimit(
    DOCUMENT_TIME_LIMIT_MS,
    signal,
    (within) => pool.run<HtmlTaskResult>(task, { signal: within }),
    () => {
      return new UnreadableDocumentError("HTML", `reading it took more than ${DOCUMENT_TIME_LIMIT_MS / 1000} s`);
    },
  );
  return result.page;
}

/**
 * The most the document worker spends on one file. Its one thread serves every document of the
 * node in turn, and a library parsing a file does so in one call: 25 MB of CSV quotes would hold
 * it about 24 s (0.9 s a megabyte), while the documents behind it wait. Past the limit (or when
 * the client leaves) the worker is stopped and replaced (stopAbortedAfterMs).
 */
export const DOCUMENT_TIME_LIMIT_MS = 60_000;
/** How long an aborted document may take to end by itself before its worker is stopped. */
const STOP_ABORTED_AFTER_MS = 500;

/** Runs `work` with a signal that also aborts after `limitMs`; that abort fails it with `tooSlow()`. */
async function withTimeLimit<T>(limitMs: number, signal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>, tooSlow: () => Error): Promise<T> {
  const timeout = AbortSignal.timeout(limitMs);
  try {
    return await work(signal ? AbortSignal.any([signal, timeout]) : timeout);
  } catch (error) {
    if (error instanceof TaskAbortedError && timeout.aborted && !signal?.aborted) throw tooSlow();
    throw error;
  }
}

function documentPool(): Promise<WorkerPool> {
  shared ??= WorkerPool.start({
    name: "document extraction",
    entry: WORKER,
    data: null,
    size: 1,
    maxWaiting: 16,
    unref: true,
    stopAbortedAfterMs: STOP_ABORTED_AFTER_MS,
  }).catch((error: unknown) => {
    shared = undefined;
    throw error;
  });
  return shared;
}

let shared: Promise<WorkerPool> | undefined;
