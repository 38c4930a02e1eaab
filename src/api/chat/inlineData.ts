import { InvalidRequestError, PayloadTooLargeError } from "../../errors.js";
import { decodeBase64InSlices } from "../../http/base64InSlices.js";

/**
 * Content carried inside the JSON body: a data URL (`data:<mime>[;base64],<data>`) or bare
 * base64. Decoding is strict: a typo in a base64 string is the caller's error, not a file
 * of random bytes.
 */

export interface InlineData {
  /** The data URL's MIME type; undefined for bare base64. */
  mimeType?: string;
  data: Buffer;
}

/** Thrown with the reason, for the caller to put under the field it came from. */
export class InlineDataError extends Error {
  override name = "InlineDataError";
}

/** Thrown before decoding when the decoded content would be larger than allowed. */
export class InlineDataTooLargeError extends Error {
  override name = "InlineDataTooLargeError";
  constructor(readonly bytes: number) {
    super(`${bytes} bytes`);
  }
}

const DATA_URL = /^data:([^,;]*)((?:;[^,;]*)*),/i;

export async function decodeInlineData(value: string, maxBytes: number): Promise<InlineData> {
  const header = DATA_URL.exec(value.slice(0, 512));
  if (!header) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) throw new InlineDataError("this node does not fetch URLs: send the content as a data URL (data:<mime type>;base64,...)");
    return { data: await decodeBase64(value, maxBytes) };
  }
  const mimeType = header[1]!.trim().toLowerCase() || undefined;
  const isBase64 = header[2]!.split(";").some((param) => param.trim().toLowerCase() === "base64");
  const payload = value.slice(header[0].length);
  if (isBase64) return { mimeType, data: await decodeBase64(payload, maxBytes) };
  let text: string;
  try {
    text = decodeURIComponent(payload);
  } catch {
    throw new InlineDataError("the data URL is not valid percent-encoded text");
  }
  const data = Buffer.from(text, "utf8");
  if (data.length > maxBytes) throw new InlineDataTooLargeError(data.length);
  return { mimeType, data };
}

/** Strict base64 (decodeBase64InSlices: in slices, the event loop free between them); refused before decoding past `maxBytes`. */
export async function decodeBase64(value: string, maxBytes: number): Promise<Buffer> {
  if (value.trim().length === 0) throw new InlineDataError("empty: no content");
  const decoded = await decodeBase64InSlices(value, maxBytes);
  if (decoded.ok) return decoded.data;
  if (decoded.reason === "too-large") throw new InlineDataTooLargeError(decoded.bytes);
  throw new InlineDataError("not valid base64");
}

/**
 * decodeInlineData for a field of the request: content over `maxBytes` is a 413 (the message
 * from `tooLarge`, after the field's path), anything malformed a 400 naming the field.
 */
export async function decodeInlineField(value: string, field: readonly (string | number)[], maxBytes: number, tooLarge: (bytes: number) => string): Promise<InlineData> {
  try {
    return await decodeInlineData(value, maxBytes);
  } catch (error) {
    if (error instanceof InlineDataTooLargeError) throw new PayloadTooLargeError(`${field.join(".")}: ${tooLarge(error.bytes)}`);
    if (error instanceof InlineDataError) throw InvalidRequestError.forField([...field], error.message);
    throw error;
  }
}
