import { z } from "zod";

/**
 * POST /image/background-remove: the reference's BackgroundRemoveImageRequest, as JSON (`image`
 * base64 or a data: URL, or `image_url`) or multipart/form-data (`image` a file).
 */
export const BackgroundRemoveImageRequest = z.looseObject({
  image: z.string().min(1).optional(),
  image_url: z.url({ protocol: /^https?$/ }).optional(),
  /** Hearth extension: which background-removal model (default: the node's first). */
  model: z.string().min(1).optional(),
});
export type BackgroundRemoveImageRequest = z.infer<typeof BackgroundRemoveImageRequest>;
