import { loadOnFirstUse } from "../loadOnFirstUse.js";

/** sharp (libvips and its thread pool) loads with the first picture, not at start. */
const loadSharp = loadOnFirstUse(async () => (await import("sharp")).default);

/**
 * Loads sharp now: importing it holds the event loop about 90 ms (measured on the 2-core host),
 * which the streams in flight at a first picture would wait behind. Image backends call it when
 * the node starts (their `prepare`), so only a node with image models loads it.
 */
export function prepareImageCodec(): Promise<unknown> {
  return loadSharp();
}
/**
 * Image encoding (sharp, i.e. libvips: runs on libuv's thread pool, never on the event loop).
 * Generated pixels arrive as interleaved 8-bit RGB.
 */

export const IMAGE_FORMATS = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" } as const;
export type ImageFormat = keyof typeof IMAGE_FORMATS;

export interface EncodeImageOptions {
  /** Gaussian blur strong enough that nothing can be made out (safe mode). */
  blur?: boolean;
  /** Written into the EXIF ImageDescription (generation settings, when asked for). */
  description?: string;
  /** jpeg and webp quality, 1 to 100 (default 90); png ignores it. */
  quality?: number;
  /** 4: the pixels are RGBA (a transparent background), for png and webp. Default 3 (RGB). */
  channels?: 3 | 4;
}

export async function encodeImage(rgb: Uint8Array, width: number, height: number, format: ImageFormat, options: EncodeImageOptions = {}): Promise<Buffer> {
  const sharp = await loadSharp();
  let image = sharp(Buffer.from(rgb.buffer, rgb.byteOffset, rgb.byteLength), { raw: { width, height, channels: options.channels ?? 3 } });
  if (options.blur) image = image.blur(Math.max(8, Math.round(Math.max(width, height) / 16)));
  if (options.description) image = image.withExif({ IFD0: { ImageDescription: options.description, Software: "Hearth" } });
  switch (format) {
    case "png":
      return image.png().toBuffer();
    case "jpeg":
      return image.jpeg({ quality: options.quality ?? 90 }).toBuffer();
    case "webp":
      return image.webp({ quality: options.quality ?? 90 }).toBuffer();
  }
}

/** Decodes any image sharp reads to interleaved RGB. */
export async function decodeImage(bytes: Buffer): Promise<{ rgb: Uint8Array; width: number; height: number; format: string }> {
  const sharp = await loadSharp();
  const image = sharp(bytes);
  const { format } = await image.metadata();
  const { data, info } = await image.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { rgb: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height, format: format ?? "unknown" };
}

/**
 * Resizes interleaved RGB (Lanczos), e.g. to the exact size a model's fixed factor overshoots;
 * `cover` crops the centre to a new aspect ratio instead of stretching.
 */
export async function resizeRgb(
  rgb: Uint8Array,
  width: number,
  height: number,
  toWidth: number,
  toHeight: number,
  fit: "fill" | "cover" = "fill",
): Promise<{ rgb: Uint8Array; width: number; height: number }> {
  const sharp = await loadSharp();
  const { data, info } = await sharp(Buffer.from(rgb.buffer, rgb.byteOffset, rgb.byteLength), { raw: { width, height, channels: 3 } })
    .resize(toWidth, toHeight, { fit, kernel: "lanczos3" })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { rgb: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
}

/** A picture larger than allowed, found from its header before its pixels are decoded. */
export class ImageTooLargeError extends Error {
  override name = "ImageTooLargeError";
  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    super(`${width}×${height} pixels`);
  }
}

/**
 * Decodes a caller's picture (PNG, JPEG, WebP; GIF and other animations: the first frame) to
 * interleaved RGB, refusing before decoding one with more than `maxPixels` pixels. sharp's
 * errors (not an image, truncated data) are thrown as they are.
 */
export async function decodeInputImage(bytes: Buffer, maxPixels: number): Promise<{ rgb: Uint8Array; width: number; height: number; format: string }> {
  const sharp = await loadSharp();
  const image = sharp(bytes, { limitInputPixels: false });
  const { width = 0, height = 0, pageHeight, format } = await image.metadata();
  const frameHeight = pageHeight ?? height;
  if (width * frameHeight > maxPixels) throw new ImageTooLargeError(width, frameHeight);
  const { data, info } = await image.removeAlpha().toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
  return { rgb: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height, format: format ?? "unknown" };
}

/** Raw pixels with 1 (grey), 3 or 4 (with alpha) channels to interleaved RGB. */
export async function rawToRgb(
  data: Uint8Array | Uint8ClampedArray,
  width: number,
  height: number,
  channels: 1 | 3 | 4,
): Promise<{ rgb: Uint8Array; width: number; height: number }> {
  const sharp = await loadSharp();
  const input = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const { data: out, info } = await sharp(input, { raw: { width, height, channels } }).removeAlpha().toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
  return { rgb: new Uint8Array(out.buffer, out.byteOffset, out.byteLength), width: info.width, height: info.height };
}

/**
 * An edit mask: any picture sharp reads, to one byte per pixel (255 = repaint), resized the way
 * its picture is (`fit`) to `toWidth` x `toHeight`. Alpha counts: a transparent pixel is repainted.
 * A mask whose header says it is not `source`'s size is not decoded (mask: null): a small file can
 * hold a picture whose pixels would take gigabytes.
 */
export async function decodeMask(
  bytes: Buffer,
  source: { width: number; height: number },
  toWidth: number,
  toHeight: number,
  fit: "fill" | "cover",
): Promise<{ mask: Uint8Array | null; sourceWidth: number; sourceHeight: number }> {
  const sharp = await loadSharp();
  // No pixel limit of sharp's own: the size check below bounds the mask to its picture's.
  const image = sharp(bytes, { limitInputPixels: false });
  const { width = 0, height = 0, hasAlpha } = await image.metadata();
  if (width !== source.width || height !== source.height) return { mask: null, sourceWidth: width, sourceHeight: height };
  // A PNG mask with alpha: transparent means repaint (the standard's convention); otherwise white means repaint.
  const grey = hasAlpha ? image.ensureAlpha().extractChannel(3).negate() : image.greyscale().toColourspace("b-w");
  const { data } = await grey.resize(toWidth, toHeight, { fit, kernel: "nearest" }).raw().toBuffer({ resolveWithObject: true });
  return { mask: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), sourceWidth: width, sourceHeight: height };
}

/** RGBA pixels (a cut-out with its transparency) to PNG. */
export async function encodeRgbaPng(rgba: Uint8Array, width: number, height: number): Promise<Buffer> {
  const sharp = await loadSharp();
  return sharp(Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength), { raw: { width, height, channels: 4 } })
    .png()
    .toBuffer();
}
