import { z } from "zod";
import {
  EmbeddingSettings,
  ImageSettings,
  LlamaSettings,
  MusicSettings,
  OnnxSettings,
  SpeechSettings,
  TranscriptionSettings,
  UpstreamSettings,
  VideoSettings,
  VisionSettings,
  VoiceCloningSettings,
  UpscaleSettings,
} from "./backendSettings.js";
import { BACKEND_NAMES } from "../engines/backendNames.js";
import { pricingProblem, type ModelPricing } from "./pricing.js";

/** The model registry: models.config.json, one entry per model a request can name. */

const QueueSettings = z.strictObject({
  /** Requests allowed to wait for a free sequence; beyond this the model answers 503. */
  maxWaiting: z.number().int().min(0).default(32),
});

const Capabilities = z.looseObject({
  optimizedForCode: z.boolean().default(false),
  quantization: z.enum(["fp4", "fp8", "fp16", "bf16", "int8", "int4", "not-available"]).default("not-available"),
  supportsFunctionCalling: z.boolean().default(false),
  supportsAudioInput: z.boolean().default(false),
  supportsReasoning: z.boolean().default(false),
  supportsReasoningEffort: z.boolean().default(false),
  supportsResponseSchema: z.boolean().default(false),
  supportsMultipleImages: z.boolean().default(false),
  supportsVision: z.boolean().default(false),
  supportsVideoInput: z.boolean().default(false),
  supportsWebSearch: z.boolean().default(false),
  supportsLogProbs: z.boolean().default(false),
  supportsTeeAttestation: z.boolean().default(false),
  supportsE2EE: z.boolean().default(false),
  supportsXSearch: z.boolean().default(false),
});

export const ModelEntry = z.strictObject({
  /** Letters, digits, '.', '_', '-'; '/' may separate segments (e.g. openai/whisper-large-v3). */
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/, "model ids use letters, digits, '.', '_' and '-' (and '/' between segments)"),
  name: z.string().optional(),
  description: z.string().optional(),
  /** Other names a request may use for this model (e.g. the standard's "whisper-1"); they win over the built-in standard names. */
  aliases: z.array(z.string().min(1).max(256)).default([]),
  /** "background-removal" is Hearth's own: such models serve POST /image/background-remove and are not listed in GET /models (the reference has no such type). */
  type: z.enum(["text", "embedding", "tts", "asr", "image", "video", "upscale", "inpaint", "music", "background-removal"]),
  /** Which engine runs it (src/engines/registry.ts describes each). */
  backend: z.enum(BACKEND_NAMES),
  /**
   * Model file (GGUF) or model directory (ONNX layouts); relative paths resolve against this
   * config file; `{dataDir}` expands to the data directory.
   */
  file: z.string().optional(),
  /** A demo fixture Hearth generates at `file` when it is missing (tiny random weights). */
  generate: z
    .enum([
      "tiny-chat",
      "tiny-reasoning",
      "tiny-coder",
      "tiny-kokoro",
      "tiny-vits",
      "tiny-whisper",
      "tiny-sd",
      "tiny-sd-inpaint",
      "tiny-embedding",
      "tiny-embedding-gguf",
      "tiny-swin2sr",
      "tiny-modnet",
      "tiny-vlm",
      "tiny-musicgen",
    ])
    .optional(),
  llama: LlamaSettings.default(LlamaSettings.parse({})),
  onnx: OnnxSettings.default(OnnxSettings.parse({})),
  speech: SpeechSettings.default(SpeechSettings.parse({})),
  voiceCloning: VoiceCloningSettings.optional(),
  transcription: TranscriptionSettings.default(TranscriptionSettings.parse({})),
  upstream: UpstreamSettings.optional(),
  image: ImageSettings.default(ImageSettings.parse({})),
  video: VideoSettings.default(VideoSettings.parse({})),
  embedding: EmbeddingSettings.default(EmbeddingSettings.parse({})),
  upscale: UpscaleSettings.default(UpscaleSettings.parse({})),
  music: MusicSettings.default(MusicSettings.parse({})),
  vision: VisionSettings.default(VisionSettings.parse({})),
  queue: QueueSettings.default(QueueSettings.parse({})),
  created: z.number().int().optional(),
  privacy: z.enum(["private", "anonymized"]).default("private"),
  offline: z.boolean().default(false),
  beta: z.boolean().default(false),
  traits: z.array(z.string()).default([]),
  capabilities: Capabilities.default(Capabilities.parse({})),
  constraints: z
    .looseObject({
      temperature: z.object({ default: z.number() }).default({ default: 0.8 }),
      top_p: z.object({ default: z.number() }).default({ default: 0.95 }),
    })
    .default({ temperature: { default: 0.8 }, top_p: { default: 0.95 } }),
  maxCompletionTokens: z.number().int().positive().optional(),
  /** Checked against the shapes its type takes (pricingProblem), once, in ModelsConfig. */
  pricing: z.custom<ModelPricing>((value) => typeof value === "object" && value !== null && !Array.isArray(value), "expected a pricing object").optional(),
  /**
   * Seconds this model stays loaded after its last request (overrides --keep-alive);
   * 0: unload as soon as it is idle; -1: never unload for idleness.
   */
  keepAlive: z.number().int().min(-1).optional(),
  /** Rate-limit tier: text models XS/S/M/L. */
  tier: z.enum(["XS", "S", "M", "L"]).default("S"),
  deprecation: z.strictObject({ date: z.iso.datetime({ offset: true }).or(z.iso.date()), warning: z.string(), replacementModelId: z.string().optional() }).optional(),
  /** Text models: input_audio parts are transcribed by this speech-to-text model (default: the node's default asr model). */
  audioInput: z.strictObject({ transcriptionModel: z.string().min(1) }).optional(),
  /** The service's default system prompt for this model (prepended unless the caller opts out). */
  systemPrompt: z.string().optional(),
});
export type ModelEntry = z.infer<typeof ModelEntry>;

export const ModelsConfig = z
  .strictObject({
    $schema: z.string().optional(),
    models: z.array(ModelEntry),
  })
  .superRefine((config, ctx) => {
    const seen = new Set<string>();
    const ids = new Set(config.models.map((m) => m.id));
    const aliased = new Map<string, string>();
    config.models.forEach((model, index) => {
      if (seen.has(model.id)) ctx.addIssue({ code: "custom", path: ["models", index, "id"], message: `duplicate model id "${model.id}"` });
      seen.add(model.id);
      model.aliases.forEach((alias, i) => {
        const owner = ids.has(alias) ? alias : aliased.get(alias);
        if (owner) ctx.addIssue({ code: "custom", path: ["models", index, "aliases", i], message: `"${alias}" already names the model "${owner}"` });
        aliased.set(alias, model.id);
      });
      for (const [name, voice] of Object.entries(model.speech.voiceAliases ?? {}))
        if (model.speech.voices && !model.speech.voices.includes(voice))
          ctx.addIssue({ code: "custom", path: ["models", index, "speech", "voiceAliases", name], message: "must be one of speech.voices" });
      const pricing = model.pricing === undefined ? undefined : pricingProblem(model.type, model.pricing);
      if (pricing) ctx.addIssue({ code: "custom", path: ["models", index, "pricing"], message: pricing });
      if (model.speech.defaultVoice && model.speech.voices && !model.speech.voices.includes(model.speech.defaultVoice))
        ctx.addIssue({ code: "custom", path: ["models", index, "speech", "defaultVoice"], message: "the default voice must be one of speech.voices" });
      if (!model.speech.supportedFormats.includes(model.speech.defaultFormat))
        ctx.addIssue({ code: "custom", path: ["models", index, "speech", "defaultFormat"], message: "the default format must be one of speech.supportedFormats" });
      const music = model.music;
      if (music.minDurationSeconds > music.defaultDurationSeconds || music.defaultDurationSeconds > music.maxDurationSeconds)
        ctx.addIssue({ code: "custom", path: ["models", index, "music", "defaultDurationSeconds"], message: "must lie within music.minDurationSeconds..maxDurationSeconds" });
      if (music.durationOptions && !music.durationOptions.includes(music.defaultDurationSeconds))
        ctx.addIssue({ code: "custom", path: ["models", index, "music", "durationOptions"], message: "must include music.defaultDurationSeconds" });
      if (music.durationOptions?.some((d) => d < music.minDurationSeconds || d > music.maxDurationSeconds))
        ctx.addIssue({ code: "custom", path: ["models", index, "music", "durationOptions"], message: "must lie within music.minDurationSeconds..maxDurationSeconds" });
      if (!music.supportedFormats.includes(music.defaultFormat))
        ctx.addIssue({ code: "custom", path: ["models", index, "music", "defaultFormat"], message: "the default format must be one of music.supportedFormats" });
      if (model.type === "video") {
        if (!(model.video.defaultResolution in model.video.resolutions))
          ctx.addIssue({ code: "custom", path: ["models", index, "video", "defaultResolution"], message: "must be one of video.resolutions" });
        if (!model.video.aspectRatios.includes(model.video.defaultAspectRatio))
          ctx.addIssue({ code: "custom", path: ["models", index, "video", "defaultAspectRatio"], message: "must be one of video.aspectRatios" });
      }
      const transcriber = model.audioInput?.transcriptionModel;
      if (transcriber && !config.models.some((m) => m.id === transcriber && m.type === "asr"))
        ctx.addIssue({ code: "custom", path: ["models", index, "audioInput", "transcriptionModel"], message: `no asr model "${transcriber}" in this registry` });
      if (model.image.defaultSteps > model.image.maxSteps)
        ctx.addIssue({ code: "custom", path: ["models", index, "image", "defaultSteps"], message: "must not exceed image.maxSteps" });
    });
  });

export type ModelsConfig = z.infer<typeof ModelsConfig>;

/** Fills an upstream's base URLs and keys (its own and each replica's) from the environment variables they name (explicit values win). */
export function resolveUpstream(upstream: UpstreamSettings, env: NodeJS.ProcessEnv): void {
  for (const target of [upstream, ...(upstream.replicas ?? [])]) {
    if (!target.baseUrl && target.baseUrlEnv && env[target.baseUrlEnv]) target.baseUrl = env[target.baseUrlEnv];
    if (!target.apiKey && target.apiKeyEnv && env[target.apiKeyEnv]) target.apiKey = env[target.apiKeyEnv];
  }
}
