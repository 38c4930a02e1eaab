import type { Request } from "express";
import { InvalidRequestError, UnsupportedMediaTypeError } from "../errors.js";

/**
 * A minimal multipart/form-data parser (RFC 7578 over RFC 2046) for the audio uploads. No
 * multipart package is installed (busboy, multer, formidable are absent), so Hearth reads the
 * whole body with multipartBodyParser (readWholeBody.ts, which enforces the size limit) and splits it here. Bodies are
 * at most tens of MB, so a buffered parse is fine; the search for each boundary is Buffer.indexOf.
 *
 * Handles: quoted and unquoted boundaries, a preamble and epilogue, header names in any case,
 * quoted parameters with backslash escapes, RFC 5987 filename*, and repeated field names
 * (e.g. timestamp_granularities[]).
 */

export interface MultipartPart {
  name: string;
  filename?: string;
  contentType?: string;
  data: Buffer;
}

export interface MultipartForm {
  parts: MultipartPart[];
  /** The first value of a text field. */
  field(name: string): string | undefined;
  /** Every value of a field (repeated names, in order). */
  fields(name: string): string[];
  file(name: string): MultipartPart | undefined;
  /** Every text field as name -> values (for schema validation). */
  textFields(): Record<string, string | string[]>;
}

const MAX_PARTS = 256;
const MAX_HEADER_BYTES = 16 * 1024;
const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");

/** The boundary parameter of a multipart Content-Type header. */
export function multipartBoundary(contentType: string | undefined): string {
  const match = /;\s*boundary=(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(contentType ?? "");
  const boundary = match?.[1]?.replace(/\\(.)/g, "$1") ?? match?.[2];
  if (!boundary || boundary.length > 70) throw new InvalidRequestError("Malformed multipart body: the Content-Type header has no valid boundary");
  return boundary;
}

/** Splits `key=value; key="quoted value"` parameters; keys are lower-cased. */
export function parseHeaderParameters(value: string): { value: string; params: Record<string, string> } {
  const params: Record<string, string> = {};
  const semicolon = value.indexOf(";");
  const head = (semicolon < 0 ? value : value.slice(0, semicolon)).trim().toLowerCase();
  const pattern = /;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (const match of value.matchAll(pattern)) {
    const key = match[1]!.toLowerCase();
    params[key] = match[2] !== undefined ? match[2].replace(/\\(.)/g, "$1") : match[3]!.trim();
  }
  return { value: head, params };
}

function decodeExtendedValue(value: string): string | undefined {
  // RFC 5987: charset'language'percent-encoded
  const match = /^([^']*)'[^']*'(.*)$/.exec(value);
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[2]!);
  } catch {
    return undefined;
  }
}

function parsePartHeaders(raw: string): { name: string; filename?: string; contentType?: string } {
  const headers: Record<string, string> = {};
  for (const line of raw.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw new InvalidRequestError("Malformed multipart body: a part header has no name");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const disposition = headers["content-disposition"];
  if (!disposition) throw new InvalidRequestError("Malformed multipart body: a part has no Content-Disposition header");
  const { value, params } = parseHeaderParameters(disposition);
  if (value !== "form-data" || params.name === undefined) throw new InvalidRequestError("Malformed multipart body: a part is not form-data with a name");
  const filename = (params["filename*"] && decodeExtendedValue(params["filename*"])) ?? params.filename;
  return { name: params.name, filename, contentType: headers["content-type"] };
}

export function parseMultipart(body: Buffer, contentType: string | undefined): MultipartForm {
  const boundary = multipartBoundary(contentType);
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: MultipartPart[] = [];
  let position = body.indexOf(delimiter);
  if (position < 0) throw new InvalidRequestError("Malformed multipart body: the boundary does not occur in the body");
  // Each iteration starts at a delimiter ("--boundary") and reads the part after it.
  for (;;) {
    let cursor = position + delimiter.length;
    if (body[cursor] === 0x2d && body[cursor + 1] === 0x2d) break; // "--": the close delimiter; the rest is epilogue.
    // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
    while (body[cursor] === 0x20 || body[cursor] === 0x09) cursor++;
    if (!body.subarray(cursor, cursor + 2).equals(CRLF)) throw new InvalidRequestError("Malformed multipart body: a boundary line does not end with CRLF");
    cursor += 2;
    const headerEnd = body.indexOf(HEADER_END, cursor);
    if (headerEnd < 0 || headerEnd - cursor > MAX_HEADER_BYTES) throw new InvalidRequestError("Malformed multipart body: part headers are missing or too long");
    const headers = parsePartHeaders(body.subarray(cursor, headerEnd).toString("utf8"));
    const dataStart = headerEnd + 4;
    const next = body.indexOf(Buffer.concat([CRLF, delimiter]), dataStart);
    if (next < 0) throw new InvalidRequestError("Malformed multipart body: the body ends before the closing boundary");
    parts.push({ ...headers, data: body.subarray(dataStart, next) });
    if (parts.length > MAX_PARTS) throw new InvalidRequestError(`Malformed multipart body: more than ${MAX_PARTS} parts`);
    position = next + 2;
  }
  return formOf(parts);
}

function formOf(parts: MultipartPart[]): MultipartForm {
  const text = (p: MultipartPart) => p.data.toString("utf8");
  const isField = (p: MultipartPart) => p.filename === undefined;
  return {
    parts,
    field: (name) => {
      const part = parts.find((p) => p.name === name && isField(p));
      return part && text(part);
    },
    fields: (name) => parts.filter((p) => p.name === name && isField(p)).map(text),
    file: (name) => parts.find((p) => p.name === name && p.filename !== undefined) ?? parts.find((p) => p.name === name),
    textFields: () => {
      const out: Record<string, string | string[]> = {};
      for (const part of parts.filter(isField)) {
        const existing = out[part.name];
        out[part.name] = existing === undefined ? text(part) : [...(Array.isArray(existing) ? existing : [existing]), text(part)];
      }
      return out;
    },
  };
}

/** The multipart body of a request read by multipartBodyParser; 415 for any other content type. */
export function readMultipart(req: Request): MultipartForm {
  if (!req.is("multipart/form-data")) throw new UnsupportedMediaTypeError("multipart/form-data");
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  return parseMultipart(body, req.get("content-type"));
}
