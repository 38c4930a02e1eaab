import { randomBytes } from "node:crypto";
import sharp from "sharp";

/**
 * A PNG of random pixels: it does not compress, so its file is as large as a photo of that size
 * (400x400 is about 480 KB), as uploads from real clients are.
 */
export function noisePng(width: number, height: number): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}
