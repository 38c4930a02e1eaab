import { z } from "zod";

/**
 * What models cost, in the reference API's shapes. Each model type accepts its own shapes
 * (PRICING_BY_TYPE), and the model registry checks an entry's pricing against those alone.
 */

const Price = z.object({ usd: z.number().nonnegative(), diem: z.number().nonnegative() });

/** The reference's text pricing shape: prices per million tokens. */
export const TextPricing = z.strictObject({
  input: Price,
  output: Price,
  cache_input: Price.optional(),
  cache_write: Price.optional(),
});
/** Other model types, in the reference's shapes: per million embedding tokens, per image, per audio second, per thousand characters, per video second. */
export const EmbeddingPricing = z.strictObject({ input: Price });
/**
 * Per image. `steps` (a Hearth extension) prices classes of step counts: the class with the
 * smallest `max_steps` that covers the request applies, `generation` above every class.
 */
export const ImagePricing = z.strictObject({
  generation: Price,
  steps: z.record(z.string(), z.strictObject({ usd: z.number().nonnegative(), diem: z.number().nonnegative(), max_steps: z.number().int().positive() })).optional(),
});
export const AudioSecondPricing = z.strictObject({ per_audio_second: Price });
export const CharacterPricing = z.strictObject({ per_thousand_characters: Price });
/** Per second of video; `resolutions` (a Hearth extension) overrides the rate for a resolution. */
export const VideoSecondPricing = z.strictObject({ per_second: Price, resolutions: z.record(z.string(), Price).optional() });
/** The reference's duration tiers: a fixed price for any duration within [min_seconds, max_seconds]. */
export const VideoDurationPricing = z.strictObject({
  durations: z.record(
    z.string(),
    z.strictObject({ usd: z.number().nonnegative(), diem: z.number().nonnegative(), min_seconds: z.number().nonnegative(), max_seconds: z.number().positive() }),
  ),
});
/** The reference's upscale shape: a price per picture for 2x and for 4x. */
export const UpscalePricing = z.strictObject({ upscale: z.strictObject({ "2x": Price, "4x": Price }) });
/** The reference's music shapes besides duration tiers: per second of generated music, or per generation. */
export const MusicSecondPricing = z.strictObject({ per_second: Price });
export const MusicGenerationPricing = z.strictObject({ generation: Price });
export const ModelPricing = z.union([TextPricing, EmbeddingPricing, ImagePricing, AudioSecondPricing, CharacterPricing, VideoSecondPricing, VideoDurationPricing, UpscalePricing]);
export type ModelPricing = z.infer<typeof ModelPricing>;

/**
 * The pricing shapes each model type takes, with the sentence that says so when an entry
 * gets it wrong. Types not listed (inpaint) take any of the shapes.
 */
const PRICING_BY_TYPE: Record<string, { shapes: z.ZodType[]; message: string }> = {
  text: { shapes: [TextPricing], message: "per million input and output tokens: { input, output, cache_input?, cache_write? }" },
  // The text shape is accepted too (as it always was): only its input price applies.
  embedding: { shapes: [EmbeddingPricing, TextPricing], message: "per million input tokens: { input }" },
  tts: { shapes: [CharacterPricing, EmbeddingPricing], message: "per thousand characters { per_thousand_characters } (or per million characters { input })" },
  asr: { shapes: [AudioSecondPricing], message: "per audio second: { per_audio_second }" },
  image: { shapes: [ImagePricing], message: "per image: { generation, steps? }" },
  video: { shapes: [VideoSecondPricing, VideoDurationPricing], message: "per second ({ per_second, resolutions? }) or by duration tier ({ durations })" },
  upscale: { shapes: [UpscalePricing], message: 'per picture and factor: { upscale: { "2x", "4x" } }' },
  "background-removal": { shapes: [ImagePricing], message: "per picture: { generation }" },
  music: {
    shapes: [MusicSecondPricing, MusicGenerationPricing, VideoDurationPricing],
    message: "per second ({ per_second }), per generation ({ generation }) or by duration tier ({ durations })",
  },
};

/**
 * Checks a registry entry's pricing against the shapes its model type takes (the only check
 * of pricing: the entry schema accepts any object here). Returns the problem, or undefined.
 */
export function pricingProblem(type: string, pricing: unknown): string | undefined {
  const rule = PRICING_BY_TYPE[type];
  if (!rule) return ModelPricing.safeParse(pricing).success ? undefined : "expected one of the pricing shapes";
  if (rule.shapes.some((shape) => shape.safeParse(pricing).success)) return undefined;
  return `${type} models are priced ${rule.message}`;
}
