import Papa from "papaparse";
import { detectDocumentType, SUPPORTED_DOCUMENTS, type DocumentHints, type DocumentType } from "./detectDocumentType.js";
import { DocumentTextTooLongError, DocumentTooLargeError, UnreadableDocumentError, UnsupportedDocumentError } from "./errors.js";
import { readHtml } from "./readHtml.js";
import { MAX_OFFICE_EXPANDED_BYTES, zipExpansionPastLimit } from "./zipExpansion.js";

/**
 * Documents to plain text a language model can read, one well-kept library per format. Each
 * entry may throw whatever its library throws; `extractDocument` reports that as the reason.
 * The libraries load on first use (together they add seconds to start-up).
 */
export const DOCUMENT_EXTRACTORS = Object.freeze({
  pdf: async (data, { maxChars }) => {
    const { getDocumentProxy } = await import("unpdf");
    // pdf.js takes ownership of (detaches) the array it is given: hand it a copy.
    const pdf = await getDocumentProxy(new Uint8Array(data), { verbosity: 0 });
    try {
      // Page by page, each page's text as it streams, stopping once past the limit: a 1.5 MB PDF
      // can hold a content stream of hundreds of MB of text (its whole extraction took minutes
      // and gigabytes). Each item's text and line end are joined as unpdf's extractText joins them.
      const pages: string[] = [];
      let chars = 0;
      for (let number = 1; number <= pdf.numPages; number++) {
        const reader = (await pdf.getPage(number)).streamTextContent().getReader();
        let page = "";
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const item of value.items) if ("str" in item) page += item.str + (item.hasEOL ? "\n" : "");
          // Whitespace is tidied afterwards: twice the limit leaves it room.
          if (chars + page.length > 2 * maxChars) {
            const tooLong = new DocumentTextTooLongError(maxChars);
            // pdf.js stops the page's extraction on a cancel with an Error as its reason.
            await reader.cancel(tooLong);
            throw tooLong;
          }
        }
        chars += page.length + 2;
        pages.push(page);
      }
      return pages.join("\n\n");
    } finally {
      await pdf.destroy();
    }
  },
  docx: async (data) => {
    const { default: mammoth } = await import("mammoth");
    return (await mammoth.extractRawText({ buffer: data })).value;
  },
  pptx: async (data) => {
    const { parseOfficeAsync } = await import("officeparser");
    return parseOfficeAsync(data, { outputErrorToConsole: false });
  },
  xlsx: async (data) => {
    const { default: ExcelJS } = await import("exceljs");
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(data as unknown as ArrayBuffer);
    const sheets: string[] = [];
    workbook.eachSheet((sheet) => {
      const rows: string[][] = [];
      sheet.eachRow({ includeEmpty: false }, (row) => {
        const cells: string[] = [];
        for (let column = 1; column <= row.cellCount; column++) cells.push(row.getCell(column).text ?? "");
        rows.push(cells);
      });
      // A sheet reads as CSV rows under its name, the shape models see most often in training text.
      sheets.push(`Sheet "${sheet.name}":\n${Papa.unparse(rows, { newline: "\n" })}`);
    });
    return sheets.join("\n\n");
  },
  csv: async (data) => {
    // Delimiter and quoting detected, then written back with commas: tab- or semicolon-separated files read the same.
    const parsed = Papa.parse<string[]>(utf8(data), { skipEmptyLines: true });
    return Papa.unparse(parsed.data, { newline: "\n" });
  },
  html: async (data) => {
    const { title, text } = await readHtml(utf8(data));
    return title && !text.trimStart().startsWith(title) ? `${title}\n\n${text}` : text;
  },
  markdown: async (data) => utf8(data),
  text: async (data) => utf8(data),
} as const satisfies Record<DocumentType, (data: Buffer, limits: DocumentLimits) => Promise<string>>);

/** What an extraction may produce: past it, a DocumentTextTooLongError (an extractor that can stop early does). */
export interface DocumentLimits {
  maxChars: number;
}

/** How messages name each type. */
export const DOCUMENT_TYPE_NAMES: Record<DocumentType, string> = {
  pdf: "PDF",
  docx: "DOCX",
  pptx: "PPTX",
  xlsx: "XLSX",
  csv: "CSV",
  html: "HTML",
  markdown: "Markdown",
  text: "text",
};

export interface ExtractedDocument {
  type: DocumentType;
  text: string;
}

/** The formats that are zips of XML parts, measured unzipped before their library reads them. */
const ZIPPED_TYPES: ReadonlySet<DocumentType> = new Set(["docx", "pptx", "xlsx"]);

/**
 * Detects the type, extracts, and tidies the whitespace. Throws UnsupportedDocumentError,
 * UnreadableDocumentError, DocumentTooLargeError or DocumentTextTooLongError.
 */
export async function extractDocument(data: Buffer, hints: DocumentHints = {}, limits: DocumentLimits = { maxChars: Number.POSITIVE_INFINITY }): Promise<ExtractedDocument> {
  const type = detectDocumentType(data, hints);
  if (!type) {
    const declared = [hints.mimeType, hints.filename].filter(Boolean).join(", ") || "no MIME type or filename, and the bytes are not recognised";
    throw new UnsupportedDocumentError(`${declared}; supported: ${SUPPORTED_DOCUMENTS}`);
  }
  if (ZIPPED_TYPES.has(type) && zipExpansionPastLimit(data, MAX_OFFICE_EXPANDED_BYTES) !== null) {
    throw new DocumentTooLargeError(DOCUMENT_TYPE_NAMES[type], MAX_OFFICE_EXPANDED_BYTES);
  }
  let text: string;
  try {
    text = await DOCUMENT_EXTRACTORS[type](data, limits);
  } catch (error) {
    if (error instanceof DocumentTextTooLongError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new UnreadableDocumentError(DOCUMENT_TYPE_NAMES[type], reason.split("\n")[0]!.slice(0, 300) || "unknown error");
  }
  const tidied = tidy(text);
  if (tidied.length > limits.maxChars) throw new DocumentTextTooLongError(limits.maxChars, tidied.length);
  return { type, text: tidied };
}

function utf8(data: Buffer): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(data);
  } catch {
    throw new Error("the file is not UTF-8 text");
  }
}

/** Unix newlines, no trailing spaces, at most one blank line in a row, no NULs. */
function tidy(text: string): string {
  return text
    .replace(/\r\n?/g, "\n")
    .replaceAll("\u0000", "")
    .replace(/[ \t\u00a0]+$/gm, "")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
