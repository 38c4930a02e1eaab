import type { ServerConfig } from "../../config/serverSettings.js";
import { ApiError, InvalidRequestError, PayloadTooLargeError } from "../../errors.js";
import { decodeImage } from "../../media/image.js";
import { fetchFile } from "../../search/fetchFile.js";

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
): Promise<{ rgb: Uint8Array; width: number; height: number }> {
  let bytes: Buffer | undefined = source.upload ?? (source.base64 !== undefined ? decodeBase64Image(source.base64) : undefined);
  let name = "image";
  if (!bytes && source.url !== undefined) {
    name = "image_url";
    if (config.webScraping !== "on") {
      throw new ApiError(503, "fetching an image by URL is not enabled on this node (an operator starts it with --web-scraping on); send the image itself instead", {
        code: "URL_FETCH_DISABLED",
      });
    }
    const fetched = await fetchFile(source.url, { maxBytes: Math.round(config.maxUploadMb * 1e6), timeoutMs: config.requestTimeoutMs }, signal);
    if (!fetched.ok) {
      if (fetched.tooLarge) throw new PayloadTooLargeError(`Could not fetch ${source.url}: ${fetched.reason} (--max-upload-mb)`);
      throw new ApiError(422, `Could not fetch ${source.url}: ${fetched.reason}`, { code: "FETCH_FAILED" });
    }
    bytes = fetched.file.data;
  }
  if (!bytes) throw field("image", "an image is required: a file part named image, a base64 string in image, or image_url");
  const decoded = bytes;
  return decodeImage(decoded).catch(() => {
    throw field(name, "the image could not be decoded (PNG, JPEG, WebP, GIF, AVIF and TIFF are read)");
  });
}

/** Base64, or a data: URL; a 400 naming `image` when it is neither. */
function decodeBase64Image(value: string): Buffer {
  const base64 = value.startsWith("data:") ? value.slice(value.indexOf(",") + 1) : value;
  if (!/^[A-Za-z0-9+/=\s_-]+$/.test(base64)) throw field("image", "image is a base64 string or a data: URL");
  const bytes = Buffer.from(base64, "base64");
  if (bytes.length === 0) throw field("image", "image is empty");
  return bytes;
}
