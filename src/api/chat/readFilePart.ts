import { detectDocumentType, type DocumentHints } from "../../documents/detectDocumentType.js";
import { extractDocument } from "../../documents/extractDocument.js";
import { extractDocumentOffThread } from "../../documents/extractDocumentOffThread.js";
import { DocumentTextTooLongError, DocumentTooLargeError, UnreadableDocumentError, UnsupportedDocumentError } from "../../documents/errors.js";
import { scannedPagePictures } from "../../documents/scannedPages.js";
import type { UserContentPart } from "../../engines/types.js";
import { InvalidRequestError, PayloadTooLargeError } from "../../errors.js";
import { encodeImage, rawToRgb } from "../../media/image.js";
import type { PartContext } from "./partContext.js";
import { decodeInlineField } from "./inlineData.js";
import type { ContentPart } from "./schema.js";

type FilePart = Extract<ContentPart, { type: "file" }>;

/**
 * A `file` part becomes the document's text, wrapped so the model sees which file it came
 * from: `<file name="report.pdf">...</file>`. A scanned PDF (pages without text) sent to a model
 * that sees (here, or an upstream that declares vision) becomes its page pictures inside the same
 * wrapper, each counted as an image.
 */
export async function readFilePart(part: FilePart, ctx: PartContext): Promise<string | UserContentPart[]> {
  const { file } = part;
  const path = [...ctx.path, "file"];
  if (file.file_data === undefined) {
    if (file.file_id !== undefined) {
      throw InvalidRequestError.forField([...path, "file_id"], "this node has no Files API: send the file's content in file_data (a data URL)");
    }
    throw InvalidRequestError.forField([...path, "file_data"], "required: the file's content as a data URL (data:<mime type>;base64,...)");
  }
  const { maxFileBytes, maxFileChars } = ctx.limits;
  const decoded = await decodeInlineField(
    file.file_data,
    [...path, "file_data"],
    maxFileBytes,
    (bytes) => `the file is ${megabytes(bytes)} MB; this node accepts files up to ${megabytes(maxFileBytes)} MB (--max-upload-mb)`,
  );
  if (decoded.data.length === 0) throw InvalidRequestError.forField([...path, "file_data"], "empty: the file has no content");

  let text: string;
  try {
    const hints = { mimeType: decoded.mimeType, filename: file.filename };
    const limits = { maxChars: maxFileChars };
    ({ text } = await (parsesOffThread(decoded.data, hints) ? extractDocumentOffThread(decoded.data, hints, limits, ctx.signal) : extractDocument(decoded.data, hints, limits)));
  } catch (error) {
    if (error instanceof UnsupportedDocumentError || error instanceof UnreadableDocumentError || error instanceof DocumentTextTooLongError) {
      throw InvalidRequestError.forField(path, error.message);
    }
    if (error instanceof DocumentTooLargeError) throw new PayloadTooLargeError(`${path.join(".")}: ${error.message}`);
    throw error;
  }
  const name = (file.filename ?? "").replace(/["<>\n\r]/g, "_");
  const opening = `<file${name ? ` name="${name}"` : ""}>`;
  const visual = ctx.visual;
  if (text.trim() === "" && visual.kind !== "none" && visual.maxImages > 0 && detectDocumentType(decoded.data, { mimeType: decoded.mimeType, filename: file.filename }) === "pdf") {
    const pages = await scannedPages(decoded.data, path, ctx, visual.maxImages);
    if (pages.length > 0) return [{ type: "text", text: opening }, ...pages, { type: "text", text: "</file>" }];
  }
  // A document cannot close its own wrapper and pass the rest off as the caller's words.
  const body = text.replace(/<\/file>/gi, "<\\/file>");
  return `${opening}\n${body}\n</file>`;
}

/** A scanned PDF's page pictures as image parts, each counted against the model's image limit (a 400 naming the file past it). */
async function scannedPages(data: Buffer, path: (string | number)[], ctx: PartContext, maxImages: number): Promise<UserContentPart[]> {
  const pictures = await scannedPagePictures(data, maxImages - ctx.counts.images + 1);
  const parts: UserContentPart[] = [];
  for (const picture of pictures) {
    ctx.counts.images++;
    if (ctx.counts.images > maxImages) {
      throw InvalidRequestError.forField(
        path,
        `page ${picture.page} of this scanned document is image ${ctx.counts.images} of the request; the model "${ctx.entry.id}" takes at most ${maxImages}`,
      );
    }
    const image = await rawToRgb(picture.data, picture.width, picture.height, picture.channels);
    // A model here reads the pixels; an upstream that sees gets the page as a PNG data URL.
    const url = ctx.visual.kind === "relayed" ? `data:image/png;base64,${(await encodeImage(image.rgb, image.width, image.height, "png")).toString("base64")}` : undefined;
    const source = url ? { type: "image_url", image_url: { url } } : { type: "image_url" };
    parts.push({ type: "text", text: `Page ${picture.page}:` }, url ? { type: "image", source } : { type: "image", source, image });
  }
  return parts;
}

/**
 * Office documents and PDFs are parsed in a worker thread (seconds of CPU for a large one);
 * so is any file over OFF_THREAD_BYTES, and HTML and CSV over OFF_THREAD_MARKUP_BYTES: building
 * an HTML tree and finding its article take about 0.5 s a megabyte (readHtml.ts), and a CSV of
 * short fields takes papaparse as long (a megabyte of `"` 1.1 s, of empty rows 0.8 s). Small text,
 * Markdown, HTML and CSV files are read in place: the trip to the worker would cost more than
 * they do.
 */
const OFF_THREAD_BYTES = 1e6;
const OFF_THREAD_MARKUP_BYTES = 64e3;
export function parsesOffThread(data: Buffer, hints: DocumentHints): boolean {
  if (data.length > OFF_THREAD_BYTES) return true;
  const type = detectDocumentType(data, hints);
  if (type === "html" || type === "csv") return data.length > OFF_THREAD_MARKUP_BYTES;
  return type === "pdf" || type === "docx" || type === "pptx" || type === "xlsx";
}

const megabytes = (bytes: number) => (bytes / 1e6).toFixed(bytes < 1e6 ? 2 : 1);
