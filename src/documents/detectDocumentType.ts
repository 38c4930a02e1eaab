/**
 * Which extractor reads a file: the declared MIME type first, then the filename's extension,
 * then the bytes themselves (magic numbers, the part names inside an Office zip, UTF-8 text).
 */

export const DOCUMENT_TYPES = ["pdf", "docx", "pptx", "xlsx", "csv", "html", "markdown", "text"] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

/** Shown in errors and the README: what callers may send. */
export const SUPPORTED_DOCUMENTS = "PDF, DOCX, PPTX, XLSX, CSV, HTML, Markdown and plain text (TXT, JSON, YAML, XML, source code)";

const MIME_TYPES: Record<string, DocumentType> = {
  "application/pdf": "pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "text/csv": "csv",
  "application/csv": "csv",
  "text/comma-separated-values": "csv",
  "text/html": "html",
  "application/xhtml+xml": "html",
  "text/markdown": "markdown",
  "text/x-markdown": "markdown",
  "text/plain": "text",
  "application/json": "text",
  "application/xml": "text",
  "application/yaml": "text",
  "application/x-yaml": "text",
  "application/javascript": "text",
  "application/typescript": "text",
  "application/x-sh": "text",
  "application/sql": "text",
  "application/toml": "text",
};

const TEXT_EXTENSIONS =
  "txt text log json jsonl yaml yml xml toml ini cfg conf env tsv py js mjs cjs ts tsx jsx c h cc cpp cxx hpp java go rs rb php ps1 sh bash zsh sql cs kt swift scala lua r pl css scss vue svelte tex";

const EXTENSIONS: Record<string, DocumentType> = {
  pdf: "pdf",
  docx: "docx",
  pptx: "pptx",
  xlsx: "xlsx",
  csv: "csv",
  html: "html",
  htm: "html",
  xhtml: "html",
  md: "markdown",
  markdown: "markdown",
  ...Object.fromEntries(TEXT_EXTENSIONS.split(" ").map((ext) => [ext, "text" as const])),
};

export interface DocumentHints {
  mimeType?: string;
  filename?: string;
}

export function detectDocumentType(data: Uint8Array, hints: DocumentHints = {}): DocumentType | undefined {
  const mime = hints.mimeType ? hints.mimeType.split(";")[0]!.trim().toLowerCase() : undefined;
  if (mime && MIME_TYPES[mime]) return MIME_TYPES[mime];
  // Any other text/* (text/x-python, text/javascript...) is read as text.
  if (mime?.startsWith("text/")) return "text";
  const ext = hints.filename?.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1];
  if (ext && Object.hasOwn(EXTENSIONS, ext)) return EXTENSIONS[ext];
  return sniff(data);
}

function sniff(data: Uint8Array): DocumentType | undefined {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buffer.subarray(0, 1024).includes("%PDF-")) return "pdf";
  if (buffer.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]))) {
    // Office Open XML is a zip whose entry names (stored uncompressed in the headers) say what it holds.
    if (buffer.includes("word/document.xml")) return "docx";
    if (buffer.includes("ppt/presentation.xml")) return "pptx";
    if (buffer.includes("xl/workbook.xml")) return "xlsx";
    return undefined;
  }
  const head = buffer.subarray(0, 8192);
  if (head.includes(0)) return undefined;
  try {
    // Cut at a character boundary: a multi-byte sequence split at 8 KiB is not an error.
    const text = new TextDecoder("utf-8", { fatal: true }).decode(head.length === buffer.length ? head : trimPartial(head));
    if (/^\s*(<!doctype html|<html[\s>])/i.test(text.replace(/^\uFEFF/, ""))) return "html";
    return "text";
  } catch {
    return undefined;
  }
}

/** Drops a trailing, incomplete UTF-8 sequence. */
function trimPartial(bytes: Buffer): Buffer {
  let end = bytes.length;
  for (let i = 1; i <= 3 && end - i >= 0; i++) {
    const byte = bytes[end - i]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte
    if (byte >= 0xc0) end -= i; // lead byte of a sequence that may be cut
    break;
  }
  return bytes.subarray(0, end);
}
