import { z } from "zod";
import { Cost } from "../chat/schema.js";

/**
 * Image generation wire shapes: the reference's GenerateImageRequest (POST /image/generate)
 * and the chat-completions standard's images request (POST /images/generations). Unknown
 * fields pass through, as the brief allows.
 */

export const IMAGE_FORMAT_NAMES = ["jpeg", "png", "webp"] as const;

export const GenerateImageRequest = z
  .looseObject({
    model: z.string().min(1),
    prompt: z.string().min(1).max(7500),
    negative_prompt: z.string().max(7500).optional(),
    /** Per-model bounds (maxWidth, widthHeightDivisor) are checked against the registry. */
    width: z.number().int().positive().max(4096).optional(),
    height: z.number().int().positive().max(4096).optional(),
    steps: z.number().int().positive().optional(),
    cfg_scale: z.number().gt(0).max(20).optional(),
    seed: z.number().int().min(-999999999).max(999999999).optional(),
    format: z.enum(IMAGE_FORMAT_NAMES).default("webp"),
    return_binary: z.boolean().default(false),
    variants: z.number().int().min(1).max(4).optional(),
    safe_mode: z.boolean().default(true),
    hide_watermark: z.boolean().default(false),
    embed_exif_metadata: z.boolean().default(false),
    style_preset: z.string().optional(),
    lora_strength: z.number().int().min(0).max(100).optional(),
    aspect_ratio: z.string().optional(),
    resolution: z.string().optional(),
    quality: z.enum(["low", "medium", "high"]).optional(),
    enable_web_search: z.boolean().optional(),
    disable_prompt_optimization_thinking: z.boolean().optional(),
    enhance_prompt: z.boolean().optional(),
    style_references: z.array(z.looseObject({ image: z.string(), strength: z.number().min(0.1).max(1).optional() })).optional(),
    inpaint: z.unknown().optional(),
  })
  .superRefine((request, ctx) => {
    if (request.return_binary && (request.variants ?? 1) > 1) {
      ctx.addIssue({ code: "custom", path: ["variants"], message: "variants above 1 need return_binary: false (one binary image per response)" });
    }
  });
export type GenerateImageRequest = z.infer<typeof GenerateImageRequest>;

export const GenerateImageResponse = z.object({
  id: z.string(),
  images: z.array(z.string()),
  request: z.unknown().nullable(),
  timing: z.object({
    inferenceDuration: z.number(),
    inferencePreprocessingTime: z.number(),
    inferenceQueueTime: z.number(),
    total: z.number(),
  }),
  /** What the request was charged (also in x-service-cost-usd / x-service-cost-diem). */
  cost: Cost,
});
export type GenerateImageResponse = z.infer<typeof GenerateImageResponse>;

export const IMAGE_SIZES = ["auto", "256x256", "512x512", "1024x1024", "1536x1024", "1024x1536", "1792x1024", "1024x1792"] as const;

export const SimpleGenerateImageRequest = z.looseObject({
  prompt: z.string().min(1).max(1500),
  /** A model this node does not have (say, an OpenAI model name) means the default image model. */
  model: z.string().default("default"),
  n: z.number().int().min(1).max(1).nullish(),
  size: z.enum(IMAGE_SIZES).nullish(),
  output_format: z.enum(IMAGE_FORMAT_NAMES).default("png"),
  response_format: z.enum(["b64_json", "url"]).nullish(),
  /** auto: safe mode on; low: off. */
  moderation: z.enum(["low", "auto"]).nullish(),
  background: z.enum(["transparent", "opaque", "auto"]).nullish(),
  output_compression: z.number().int().min(0).max(100).nullish(),
  quality: z.enum(["auto", "high", "medium", "low", "hd", "standard"]).nullish(),
  style: z.enum(["vivid", "natural"]).nullish(),
  user: z.string().optional(),
});
export type SimpleGenerateImageRequest = z.infer<typeof SimpleGenerateImageRequest>;

export const SimpleGenerateImageResponse = z.object({
  created: z.number().int(),
  data: z.array(z.union([z.object({ b64_json: z.string() }), z.object({ url: z.string() })])),
  // What the request was charged is in x-service-cost-usd / x-service-cost-diem: the reference's body is closed.
});
export type SimpleGenerateImageResponse = z.infer<typeof SimpleGenerateImageResponse>;

export const ImageStylesResponse = z.object({ object: z.literal("list"), data: z.array(z.string()) });

/**
 * Image operations of the reference (and the standard) this node does not offer: each answers a
 * 404 naming itself, and none is in the served OpenAPI document (a route that only answers 404
 * is no operation a client can use).
 */
export const UNAVAILABLE_IMAGE_OPERATIONS = {
  "/images/variations": "Image variations",
} as const;
