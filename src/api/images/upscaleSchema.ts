import { z } from "zod";

/**
 * POST /image/upscale: the reference's UpscaleImageRequest, as JSON (`image` base64, a data URL
 * too) or multipart/form-data (`image` a file, the other fields as text).
 */
export const UpscaleImageRequest = z.looseObject({
  /** Base64 (or a data: URL) in JSON; in multipart the file part of this name. */
  image: z.string().min(1).optional(),
  /** 2 or 4. A picture too large for 4 (or 2) is scaled by the largest factor that fits. */
  scale: z.coerce.number().min(2).max(4).default(2),
  /** How much detail a generative upscaler adds; a super-resolution model adds none (x-service-unsupported-parameters). */
  creativity: z.coerce.number().nullable().optional(),
  /** Hearth extension: which upscale model (default: the node's default upscale model). */
  model: z.string().min(1).optional(),
});
export type UpscaleImageRequest = z.infer<typeof UpscaleImageRequest>;
