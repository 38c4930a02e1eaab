import { detectDocumentType, type DocumentHints } from "../../documents/detectDocumentType.js";
import { extractDocument } from "../../documents/extractDocument.js";
import { extractDocumentOffThread } from "../../documents/extractDocumentOffThread.js";
import { UnreadableDocumentError, UnsupportedDocumentError } from "../../documents/errors.js";
import { InvalidRequestError } from "../../errors.js";
import type { PartContext } from "./partContext.js";
import { decodeInlineField } from "./inlineData.js";
import type { ContentPart } from "./schema.js";

type FilePart = Extract<ContentPart, { type: "file" }>;

/**
 * A `file` part becomes the document's text, wrapped so the model sees which file it came
 * from: `<file name="report.pdf">...</file>`.
 */
export async function readFilePart(part: FilePart, ctx: PartContext): Promise<string> {
  const { file } = part;
  const path = [...ctx.path, "file"];
  if (file.file_data === undefined) {
    if (file.file_id !== undefined) {
      throw InvalidRequestError.forField([...path, "file_id"], "this node has no Files API: send the file's content in file_data (a data URL)");
    }
    throw InvalidRequestError.forField([...path, "file_data"], "required: the file's content as a data URL (data:<mime type>;base64,...)");
  }
  const { maxFileBytes, maxFileChars } = ctx.limits;
  const decoded = decodeInlineField(
    file.file_data,
    [...path, "file_data"],
    maxFileBytes,
    (bytes) => `the file is ${megabytes(bytes)} MB; this node accepts files up to ${megabytes(maxFileBytes)} MB (--max-upload-mb)`,
  );
  if (decoded.data.length === 0) throw InvalidRequestError.forField([...path, "file_data"], "empty: the file has no content");

  let text: string;
  try {
    const hints = { mimeType: decoded.mimeType, filename: file.filename };
    ({ text } = await (parsesOffThread(decoded.data, hints) ? extractDocumentOffThread(decoded.data, hints, ctx.signal) : extractDocument(decoded.data, hints)));
  } catch (error) {
    if (error instanceof UnsupportedDocumentError || error instanceof UnreadableDocumentError) throw InvalidRequestError.forField(path, error.message);
    throw error;
  }
  if (text.length > maxFileChars) {
    throw InvalidRequestError.forField(path, `the file's text is ${text.length} characters long; this node reads at most ${maxFileChars} characters per file`);
  }
  const name = (file.filename ?? "").replace(/["<>\n\r]/g, "_");
  // A document cannot close its own wrapper and pass the rest off as the caller's words.
  const body = text.replace(/<\/file>/gi, "<\\/file>");
  return `<file${name ? ` name="${name}"` : ""}>\n${body}\n</file>`;
}

/**
 * Office documents and PDFs are parsed in a worker thread (seconds of CPU for a large one);
 * so is any file over OFF_THREAD_BYTES. Small text, Markdown, HTML and CSV files are read in
 * place: a thread's start-up would cost more than they do.
 */
const OFF_THREAD_BYTES = 1e6;
function parsesOffThread(data: Buffer, hints: DocumentHints): boolean {
  if (data.length > OFF_THREAD_BYTES) return true;
  const type = detectDocumentType(data, hints);
  return type === "pdf" || type === "docx" || type === "pptx" || type === "xlsx";
}

const megabytes = (bytes: number) => (bytes / 1e6).toFixed(bytes < 1e6 ? 2 : 1);
