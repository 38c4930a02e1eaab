import { type ImageToImagePipeline, pipeline, RawImage, type Tensor } from "@huggingface/transformers";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { type ExecutionProviderChoice, resolveExecutionProviders } from "../onnx/resolveExecutionProviders.js";
import type { UpscaleEngine, UpscaleOptions } from "../types.js";
import { WorkQueue } from "../WorkQueue.js";
import { transformersDeviceOptions } from "./transformersDeviceOptions.js";
import { engineSessionOptions } from "../onnx/onnxSession.js";
import { configureTransformers } from "./transformersEnv.js";
import { everySession, loadWithSessionsOffThread } from "../onnx/OffThreadSession.js";

/** One tile: the input region the model reads (`read`) and the part of it this tile answers for (`keep`). */
interface Tile {
  read: { x: number; y: number; width: number; height: number };
  keep: { x: number; y: number; width: number; height: number };
}

/**
 * Cuts a picture into tiles of at most `size` pixels a side. Each tile answers for a core of
 * `size - 2 * overlap` pixels and reads `overlap` more on every side (where the picture has
 * them), so every kept output pixel was computed with its whole neighbourhood in view.
 */
export function planTiles(width: number, height: number, size: number, overlap: number): Tile[] {
  const core = Math.max(1, size - 2 * overlap);
  const tiles: Tile[] = [];
  for (let y = 0; y < height; y += core) {
    for (let x = 0; x < width; x += core) {
      const keep = { x, y, width: Math.min(core, width - x), height: Math.min(core, height - y) };
      const x0 = Math.max(0, x - overlap);
      const y0 = Math.max(0, y - overlap);
      const x1 = Math.min(width, keep.x + keep.width + overlap);
      const y1 = Math.min(height, keep.y + keep.height + overlap);
      tiles.push({ read: { x: x0, y: y0, width: x1 - x0, height: y1 - y0 }, keep });
    }
  }
  return tiles;
}

/**
 * Super-resolution models in transformers.js' `image-to-image` layout (Swin2SR exports:
 * config.json with `upscale`, Swin2SRImageProcessor, onnx/model.onnx pixel_values ->
 * reconstruction). The picture goes through in tiles (`upscale.tileSize`, `tileOverlap`), one
 * model call at a time per model.
 */
export class TransformersUpscaleEngine implements UpscaleEngine {
  readonly kind = "upscale";
  readonly router = "swin2sr (transformers.js image-to-image)";
  private readonly queue: WorkQueue;

  private constructor(
    private readonly upscaler: ImageToImagePipeline,
    readonly modelScale: number,
    private readonly tileSize: number,
    private readonly tileOverlap: number,
    modelId: string,
    maxWaiting: number,
    readonly executionProvider: ExecutionProviderChoice,
  ) {
    this.queue = new WorkQueue(modelId, maxWaiting);
  }

  static async load(entry: ModelEntry, gpu: "auto" | false): Promise<TransformersUpscaleEngine> {
    configureTransformers();
    const placement = await resolveExecutionProviders(entry.onnx.executionProviders, { gpu });
    const upscaler = (await loadWithSessionsOffThread(everySession, () =>
      pipeline("image-to-image", entry.file!, {
        dtype: entry.onnx.dtype,
        ...transformersDeviceOptions(placement.providers, engineSessionOptions(entry.onnx)),
      }),
    )) as ImageToImagePipeline;
    const scale = Number((upscaler.model.config as unknown as { upscale?: number }).upscale);
    const modelScale = Number.isInteger(scale) && scale >= 2 ? scale : 2;
    return new TransformersUpscaleEngine(upscaler, modelScale, entry.upscale.tileSize, entry.upscale.tileOverlap, entry.id, entry.queue.maxWaiting, placement);
  }

  upscale(options: UpscaleOptions): Promise<{ rgb: Uint8Array; width: number; height: number }> {
    return this.queue.run(async () => {
      let picture = { rgb: options.rgb, width: options.width, height: options.height };
      for (let pass = 0; pass < options.passes; pass++) {
        picture = await this.onePass(picture, options, (fraction) => options.onProgress?.((pass + fraction) / options.passes));
      }
      return picture;
    }, options.signal);
  }

  private async onePass(
    input: { rgb: Uint8Array; width: number; height: number },
    options: UpscaleOptions,
    progress: (fraction: number) => void,
  ): Promise<{ rgb: Uint8Array; width: number; height: number }> {
    const s = this.modelScale;
    const width = input.width * s;
    const height = input.height * s;
    const out = new Uint8Array(width * height * 3);
    const tiles = planTiles(input.width, input.height, this.tileSize, this.tileOverlap);
    for (const [index, tile] of tiles.entries()) {
      options.signal?.throwIfAborted();
      const { read, keep } = tile;
      const pixels = new Uint8ClampedArray(read.width * read.height * 3);
      for (let row = 0; row < read.height; row++) {
        const from = ((read.y + row) * input.width + read.x) * 3;
        pixels.set(input.rgb.subarray(from, from + read.width * 3), row * read.width * 3);
      }
      const inputs = await this.upscaler.processor(new RawImage(pixels, read.width, read.height, 3));
      const { reconstruction } = (await this.upscaler.model(inputs)) as { reconstruction: Tensor };
      // [1, 3, H, W], padded by the processor to its pad size: read only the tile's own pixels.
      const [, , paddedHeight, paddedWidth] = reconstruction.dims as number[];
      const plane = paddedHeight! * paddedWidth!;
      const data = reconstruction.data as Float32Array;
      const offsetX = (keep.x - read.x) * s;
      const offsetY = (keep.y - read.y) * s;
      for (let row = 0; row < keep.height * s; row++) {
        const outRow = (keep.y * s + row) * width;
        const inRow = (offsetY + row) * paddedWidth!;
        for (let col = 0; col < keep.width * s; col++) {
          const source = inRow + offsetX + col;
          const target = (outRow + keep.x * s + col) * 3;
          for (let c = 0; c < 3; c++) {
            const value = data[c * plane + source]!;
            out[target + c] = Math.round(Math.min(1, Math.max(0, value)) * 255);
          }
        }
      }
      progress((index + 1) / tiles.length);
      // Let other requests' work in between tiles of a large picture.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return { rgb: out, width, height };
  }

  async dispose(): Promise<void> {
    await this.upscaler.dispose();
  }
}
