import type { ModelEntry } from "../../config/modelRegistry.js";
import type { UpscaleEngine } from "../../engines/types.js";
import { InvalidRequestError, NotFoundError, PayloadTooLargeError } from "../../errors.js";
import { encodeImage, resizeRgb } from "../../media/image.js";
import type { ModelManager } from "../../models/ModelManager.js";
import type { UpscaleImageRequest } from "./upscaleSchema.js";

export interface UpscalePlan {
  entry: ModelEntry;
  rgb: Uint8Array;
  width: number;
  height: number;
  /** The factor asked for (2 or 4), what the price is for. */
  requestedScale: number;
  /** The factor applied: the requested one, or less when the result would pass the model's pixel limit. */
  scale: number;
  targetWidth: number;
  targetHeight: number;
  /** Runs of the model (each multiplies by its own factor); the last run may overshoot, then the picture is resized to the target. */
  passes: number;
  /** Fields accepted but not honoured. */
  unsupported: string[];
}

const field = (path: string, message: string) => InvalidRequestError.forField([path], message);

/** Wire upscale request -> decoded picture, factor and passes -> PNG. Knows nothing about Express. */
export class UpscaleService {
  constructor(private readonly models: ModelManager) {}

  entryFor(modelId: string | undefined): ModelEntry {
    const id = modelId ?? this.models.defaultFor("upscale")?.id;
    if (!id) throw new NotFoundError("Image upscaling (POST /image/upscale) is not available on this node: no upscale model is configured.");
    return this.models.get(id, "upscale");
  }

  /** Checks the request for a loaded model (`modelScale`: its own factor per pass) and its decoded picture. */
  plan(entry: ModelEntry, request: UpscaleImageRequest, picture: { rgb: Uint8Array; width: number; height: number }, modelScale: number): UpscalePlan {
    if (request.scale !== 2 && request.scale !== 4) throw field("scale", "scale is 2 or 4");
    const limit = entry.upscale.maxOutputPixels;
    const pixels = picture.width * picture.height;
    const scale = Math.min(request.scale, Math.sqrt(limit / pixels));
    if (scale < 1.01) throw new PayloadTooLargeError(`the image (${picture.width}x${picture.height}) is too large to upscale: results are limited to ${limit} pixels`);
    const passes = Math.max(1, Math.ceil(Math.log(scale) / Math.log(modelScale) - 1e-9));
    const unsupported = request.creativity !== undefined && request.creativity !== null ? ["creativity"] : [];
    return {
      entry,
      ...picture,
      requestedScale: request.scale,
      scale,
      targetWidth: Math.round(picture.width * scale),
      targetHeight: Math.round(picture.height * scale),
      passes,
      unsupported,
    };
  }

  /** The model's passes, then an exact resize to the target when the passes overshoot it; PNG. */
  async run(plan: UpscalePlan, engine: UpscaleEngine, signal: AbortSignal): Promise<Buffer> {
    const upscaled = await engine.upscale({ rgb: plan.rgb, width: plan.width, height: plan.height, passes: plan.passes, signal });
    const exact =
      upscaled.width === plan.targetWidth && upscaled.height === plan.targetHeight
        ? upscaled
        : await resizeRgb(upscaled.rgb, upscaled.width, upscaled.height, plan.targetWidth, plan.targetHeight);
    return encodeImage(exact.rgb, exact.width, exact.height, "png");
  }
}
