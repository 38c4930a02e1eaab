import { z } from "zod";
import { IMAGE_FORMAT_NAMES, IMAGE_SIZES } from "./schema.js";

/**
 * POST /image/edit and /image/multi-edit: the reference's EditImageRequest and
 * MultiEditImageRequest, as JSON (pictures as base64, data: URLs or http(s) URLs) or
 * multipart/form-data (files named image / images, mask). Prompt-driven image-to-image on the
 * node's Stable Diffusion models.
 */

export const EDIT_ASPECT_RATIOS = ["auto", "1:1", "3:2", "16:9", "21:9", "9:16", "2:3", "3:4", "4:5"] as const;
/** The reference accepts "jpg" as a spelling of jpeg. */
const OutputFormat = z.preprocess((v) => (v === "jpg" ? "jpeg" : v), z.enum(IMAGE_FORMAT_NAMES)).optional();

const EditFields = {
  prompt: z.string().min(1).max(32768),
  model: z.string().min(1).optional(),
  /** Deprecated spelling of model (the reference keeps it). */
  modelId: z.string().min(1).optional(),
  aspect_ratio: z.enum(EDIT_ASPECT_RATIOS).optional(),
  /** Resolution tiers ("1K"...) are the provider's models': named in x-service-unsupported-parameters. */
  resolution: z.string().min(1).max(10).optional(),
  output_format: OutputFormat,
  safe_mode: z.coerce.boolean().default(true),
  enhance_prompt: z.coerce.boolean().optional(),
  disable_prompt_optimization_thinking: z.coerce.boolean().optional(),
  /**
   * Hearth extensions: how far from the picture to go (0 to 1; default 1 for a masked edit on an
   * inpaint model, which repaints the masked part from noise as inpainting models are trained to,
   * else 0.75), a mask (255 = repaint), and the sampler's settings.
   */
  strength: z.coerce.number().gt(0).max(1).optional(),
  mask: z.string().min(1).optional(),
  negative_prompt: z.string().max(20000).optional(),
  steps: z.coerce.number().int().min(1).max(150).optional(),
  cfg_scale: z.coerce.number().gt(0).max(20).optional(),
  seed: z.coerce.number().int().min(-999999999).max(999999999).optional(),
};

export const EditImageRequest = z.looseObject({
  ...EditFields,
  /** Base64, a data: URL or an http(s) URL (fetched under --web-scraping on); in multipart, the file part `image`. */
  image: z.string().min(1).optional(),
});
export type EditImageRequest = z.infer<typeof EditImageRequest>;

export const MultiEditImageRequest = z.looseObject({
  ...EditFields,
  /** Pictures as base64, data: URLs or http(s) URLs; in multipart, file parts named `images`. */
  images: z.array(z.string().min(1)).min(1).optional(),
  quality: z.enum(["low", "medium", "high"]).optional(),
});
export type MultiEditImageRequest = z.infer<typeof MultiEditImageRequest>;

/** A multipart text field the standard sends as "true" / "false". */
const FormBoolean = z.preprocess((v) => (v === "true" ? true : v === "false" ? false : v), z.boolean());

/**
 * POST /images/edits, the chat-completions standard's edit (what the openai client's
 * images.edit sends): multipart/form-data with the file part `image` (or `image[]`), an optional
 * `mask` file (transparent where to repaint) and these text fields.
 */
export const StandardEditImageRequest = z
  .looseObject({
    prompt: z.string().min(1).max(32000),
    /** A model this node does not have (an OpenAI model name, say) means the default edit model. */
    model: z.string().min(1).optional(),
    /** One picture per request, as /images/generations. */
    n: z.coerce.number().int().min(1).max(1).optional(),
    /** The result's size; auto (or none) keeps the picture's aspect ratio on the model's size grid. */
    size: z.enum(IMAGE_SIZES).optional(),
    response_format: z.enum(["b64_json", "url"]).optional(),
    output_format: OutputFormat,
    output_compression: z.coerce.number().int().min(0).max(100).optional(),
    background: z.enum(["transparent", "opaque", "auto"]).optional(),
    quality: z.enum(["auto", "high", "medium", "low", "standard"]).optional(),
    input_fidelity: z.enum(["high", "low"]).optional(),
    /** Partial images as server-sent events: not offered (a 400 naming stream). */
    stream: FormBoolean.optional(),
    partial_images: z.coerce.number().int().min(0).max(3).optional(),
    user: z.string().max(256).optional(),
  })
  .superRefine((body, ctx) => {
    if (body.stream === true) {
      ctx.addIssue({ code: "custom", path: ["stream"], message: "edits are not streamed on this node: send stream false (the whole picture comes in one response)" });
    }
  });
export type StandardEditImageRequest = z.infer<typeof StandardEditImageRequest>;
