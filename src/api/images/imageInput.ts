import type { Request } from "express";
import type { z } from "zod";
import type { ServerConfig } from "../../config/serverSettings.js";
import { ApiError, InvalidRequestError, PayloadTooLargeError } from "../../errors.js";
import { decodeInputImage, ImageTooLargeError } from "../../media/image.js";
import { fetchFile } from "../../search/fetchFile.js";
import { decodeBase64InSlices } from "../../http/base64InSlices.js";
import { uploadByteLimit } from "../../http/bodyLimits.js";
import { readMultipart } from "../../http/multipart.js";
import { parse, requireJson } from "../../http/parse.js";

/**
 * An image-in request's fields and its upload: multipart/form-data (the text fields, and the file
 * part named `fileField`) or JSON (415 for anything else), validated by the route's schema.
 */
export function readImageRequest<S extends z.ZodType>(req: Request, schema: S, fileField = "image"): { body: z.infer<S>; upload?: Buffer } {
  if (req.is("multipart/form-data")) {
    const form = readMultipart(req);
    return { body: parse(schema, form.textFields()), upload: form.file(fileField)?.data };
  }
  requireJson(req);
  return { body: parse(schema, req.body) };
}

/**
 * The picture of an image-in request (upscale, background removal): a multipart file part,
 * base64 (or a data: URL) in JSON, or an http(s) URL the node fetches when the operator allows
 * fetching (--web-scraping on). Every failure names the field.
 */
export interface ImageSource {
  upload?: Buffer;
  base64?: string;
  url?: string;
}

const field = (path: string, message: string) => InvalidRequestError.forField([path], message);

export async function readImageInput(
  source: ImageSource,
  config: Pick<ServerConfig, "webScraping" | "maxUploadMb" | "requestTimeoutMs">,
  signal: AbortSignal,
  /** The request's hold on memory for a fetched picture (RequestContext.holdBytes). */
  holdBytes?: (bytes: number) => void,
): Promise<{ rgb: Uint8Array; width: number; height: number }> {
  let bytes: Buffer | undefined = source.upload ?? (source.base64 !== undefined ? await decodeBase64Field(source.base64) : undefined);
  let name = "image";
  if (!bytes && source.url !== undefined) {
    name = "image_url";
    if (config.webScraping !== "on") {
      throw new ApiError(503, "fetching an image by URL is not enabled on this node (an operator starts it with --web-scraping on); send the image itself instead", {
        code: "URL_FETCH_DISABLED",
      });
    }
    const fetched = await fetchFile(source.url, { maxBytes: uploadByteLimit(config), timeoutMs: config.requestTimeoutMs, hold: holdBytes }, signal);
    if (!fetched.ok) {
      if (fetched.tooLarge) throw new PayloadTooLargeError(`Could not fetch ${source.url}: ${fetched.reason} (--max-upload-mb)`);
      throw new ApiError(422, `Could not fetch ${source.url}: ${fetched.reason}`, { code: "FETCH_FAILED" });
    }
    bytes = fetched.file.data;
  }
  if (!bytes) throw field("image", "an image is required: a file part named image, a base64 string in image, or image_url");
  // Checked from the header before decoding: a small file can hold a picture whose pixels would take gigabytes.
  return decodeInputImage(bytes, MAX_INPUT_PIXELS).catch((error: unknown) => {
    if (error instanceof ImageTooLargeError) {
      throw new PayloadTooLargeError(`${name}: the picture is ${error.width}x${error.height}; this node reads pictures of at most ${MAX_INPUT_PIXELS} pixels`);
    }
    throw field(name, "the image could not be decoded (PNG, JPEG, WebP, GIF, AVIF and TIFF are read)");
  });
}

/** The largest picture an image-in request may send (the reference's limit for edits: 33,177,600 pixels, 7680x4320). */
export const MAX_INPUT_PIXELS = 33_177_600;

/** A base64 (or data: URL) field's bytes, decoded in slices; a 400 naming the field when it is neither, or empty. */
export async function decodeBase64Field(value: string, name = "image"): Promise<Buffer> {
  const base64 = value.startsWith("data:") ? value.slice(value.indexOf(",") + 1) : value;
  const decoded = await decodeBase64InSlices(base64);
  if (!decoded.ok) throw field(name, `${name} is a base64 string or a data: URL`);
  if (decoded.data.length === 0) throw field(name, `${name} is empty`);
  return decoded.data;
}
