import { z } from "zod";
import { ModelPricing } from "../../config/pricing.js";

export const MODEL_TYPES = ["asr", "embedding", "image", "music", "text", "tts", "upscale", "inpaint", "video"] as const;

export const ListModelsQuery = z.looseObject({
  type: z.enum([...MODEL_TYPES, "all", "code"]).default("all"),
});

/** The provider's filter for traits and compatibility mappings: one model type, text when omitted. */
export const ModelNamesQuery = z.looseObject({
  type: z.enum(MODEL_TYPES).default("text"),
});

/** Trait -> the model that has it (`default`, `fastest`, ...), from each model's `traits` in the registry. */
export const ModelTraitList = z.object({
  object: z.literal("list"),
  type: z.enum(MODEL_TYPES),
  data: z.record(z.string(), z.string()),
});

/** Another name -> the local model it resolves to: configured `aliases`, and the standard's names (tts-1, whisper-1, ...) a default model answers. */
export const ModelCompatibilityList = z.object({
  object: z.literal("list"),
  type: z.enum(MODEL_TYPES),
  data: z.record(z.string(), z.string()),
});

const REASONING_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const;

/** The reference's capability flags, all of them required and nothing else (strict clients reject more). */
export const ModelCapabilities = z.strictObject({
  optimizedForCode: z.boolean(),
  quantization: z.enum(["fp4", "fp8", "fp16", "bf16", "int8", "int4", "not-available"]),
  supportsFunctionCalling: z.boolean(),
  supportsAudioInput: z.boolean(),
  supportsReasoning: z.boolean(),
  supportsReasoningEffort: z.boolean(),
  reasoningEffortOptions: z.array(z.enum(REASONING_EFFORTS)).optional(),
  defaultReasoningEffort: z.enum(REASONING_EFFORTS).optional(),
  supportsResponseSchema: z.boolean(),
  supportsMultipleImages: z.boolean(),
  maxImages: z.number().optional(),
  maxVideos: z.number().optional(),
  supportsVision: z.boolean(),
  supportsVideoInput: z.boolean(),
  supportsWebSearch: z.boolean(),
  supportsLogProbs: z.boolean(),
  supportsTeeAttestation: z.boolean(),
  supportsE2EE: z.boolean(),
  supportsXSearch: z.boolean(),
});
export type ModelCapabilities = z.infer<typeof ModelCapabilities>;

export const ModelRecord = z.object({
  id: z.string(),
  object: z.literal("model"),
  type: z.enum(MODEL_TYPES),
  created: z.number(),
  /** Always "venice.ai", the one value the reference's schema allows (see docs/api.md); who serves the model is `served_by`. */
  owned_by: z.literal("venice.ai"),
  /** This node's own identity ("hearth"): an extension field, the reference's model record allows extra fields. */
  served_by: z.string(),
  context_length: z.number().optional(),
  model_spec: z.object({
    name: z.string(),
    description: z.string().optional(),
    availableContextTokens: z.number().optional(),
    maxCompletionTokens: z.number().optional(),
    privacy: z.enum(["private", "anonymized"]),
    beta: z.boolean(),
    offline: z.boolean(),
    modelSource: z.string(),
    traits: z.array(z.string()),
    capabilities: ModelCapabilities,
    /** One of the reference's shapes: image, video, or (every other type) the sampling defaults. */
    constraints: z.record(z.string(), z.unknown()),
    pricing: ModelPricing.optional(),
    deprecation: z.object({ date: z.string(), replacementModelId: z.string().optional() }).optional(),
    /** Other names requests may use for this model: configured aliases and the standard's names (tts-1, whisper-1, ...) it is the default for. */
    aliases: z.array(z.string()).optional(),
    /** Text-to-speech models (the reference's ModelResponse fields). */
    voices: z.array(z.string()).optional(),
    default_voice: z.string().optional(),
    /** Other voice names accepted (the standard's alloy, onyx, ...) -> the voice of this model they mean. */
    voice_aliases: z.record(z.string(), z.string()).optional(),
    voice_cloning: z
      .strictObject({
        mode: z.enum(["zero_shot", "persistent"]),
        accepted_formats: z.array(z.string()),
        min_sample_seconds: z.number(),
        retention_days: z.number(),
      })
      .optional(),
    supports_custom_voice_id: z.boolean().optional(),
    supported_formats: z.array(z.string()).optional(),
    default_format: z.string().optional(),
    /** Speech models: which of prompt, temperature and top_p the model uses. */
    supportsPromptParam: z.boolean().optional(),
    supportsTemperatureParam: z.boolean().optional(),
    supportsTopPParam: z.boolean().optional(),
    /** Transcription models. */
    supportsTimestamps: z.boolean().optional(),
    supportsWordTimestamps: z.boolean().optional(),
    supportsLanguageHint: z.boolean().optional(),
    maxAudioSeconds: z.number().optional(),
    /** Music models (the reference's audio-generation fields). */
    supports_lyrics: z.boolean().optional(),
    lyrics_required: z.boolean().optional(),
    supports_force_instrumental: z.boolean().optional(),
    supports_loop: z.boolean().optional(),
    duration_options: z.array(z.number()).optional(),
    min_duration: z.number().optional(),
    max_duration: z.number().optional(),
    default_duration: z.number().optional(),
    prompt_character_limit: z.number().optional(),
    min_prompt_length: z.number().optional(),
    supports_speed: z.boolean().optional(),
    min_speed: z.number().optional(),
    max_speed: z.number().optional(),
    default_speed: z.number().optional(),
    /** Image models: whether safe mode can blur (the model has a safety classifier). */
    supportsSafeMode: z.boolean().optional(),
    /** Image models. */
    supportsStyleReferences: z.boolean().optional(),
    /** Embedding models. */
    embeddingDimensions: z.number().optional(),
    maxInputTokens: z.number().optional(),
    supportsCustomDimensions: z.boolean().optional(),
  }),
});
export type ModelRecord = z.infer<typeof ModelRecord>;

export const ModelList = z.object({
  object: z.literal("list"),
  type: ListModelsQuery.shape.type,
  data: z.array(ModelRecord),
});
