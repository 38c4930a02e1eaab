import { serveWorker } from "../engines/worker/serveWorker.js";
import { DocumentTextTooLongError, DocumentTooLargeError, UnreadableDocumentError, UnsupportedDocumentError } from "./errors.js";
import { type DocumentLimits, extractDocument, type ExtractedDocument } from "./extractDocument.js";
import type { DocumentHints } from "./detectDocumentType.js";
import { type ReadableHtml, readHtml } from "./readHtml.js";

/**
 * Worker-thread side of extractDocumentOffThread: one document's extraction (PDF, DOCX, XLSX
 * parsing are seconds of CPU for a large file), or one web page's reading (readHtmlOffThread),
 * away from the event loop. The document errors come back as results, so the caller can rethrow
 * them as the same classes.
 */
export interface DocumentTask {
  data: Uint8Array;
  hints: DocumentHints;
  limits: DocumentLimits;
}

/** A web page to read (readHtml): its title and text come back. */
export interface HtmlTask {
  html: string;
  charThreshold?: number;
}

export type HtmlTaskResult = { ok: true; page: ReadableHtml };

export type DocumentTaskResult =
  | { ok: true; document: ExtractedDocument }
  | {
      ok: false;
      error:
        | { kind: "unsupported"; described: string }
        | { kind: "unreadable"; type: string; reason: string }
        | { kind: "tooLarge"; type: string; limitBytes: number }
        | { kind: "textTooLong"; maxChars: number; length?: number };
    };

serveWorker<null, DocumentTask | HtmlTask>({
  load: async () => ({ context: null }),
  run: async (_context, task) => {
    if ("html" in task) return { result: { ok: true, page: await readHtml(task.html, { charThreshold: task.charThreshold }) } satisfies HtmlTaskResult };
    try {
      const document = await extractDocument(Buffer.from(task.data.buffer, task.data.byteOffset, task.data.byteLength), task.hints, task.limits);
      return { result: { ok: true, document } satisfies DocumentTaskResult };
    } catch (error) {
      if (error instanceof UnsupportedDocumentError) return { result: { ok: false, error: { kind: "unsupported", described: error.described } } satisfies DocumentTaskResult };
      if (error instanceof UnreadableDocumentError)
        return { result: { ok: false, error: { kind: "unreadable", type: error.type, reason: error.reason } } satisfies DocumentTaskResult };
      if (error instanceof DocumentTextTooLongError)
        return { result: { ok: false, error: { kind: "textTooLong", maxChars: error.maxChars, length: error.length } } satisfies DocumentTaskResult };
      if (error instanceof DocumentTooLargeError)
        return { result: { ok: false, error: { kind: "tooLarge", type: error.type, limitBytes: error.limitBytes } } satisfies DocumentTaskResult };
      throw error;
    }
  },
});
