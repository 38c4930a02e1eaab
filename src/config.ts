import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";

/**
 * Configuration: the server settings (flags and environment) and the model registry
 * (models.config.json). This is the only module that reads process.env.
 */

export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Every setting with its flag, environment variable and description (shared by --help and the README). */
export const SERVER_SETTINGS = {
  host: { flag: "--host <host>", env: "HEARTH_HOST", default: "127.0.0.1", description: "interface to listen on (0.0.0.0 for the LAN)" },
  port: { flag: "--port <port>", env: "HEARTH_PORT", default: "8080", description: "TCP port (0 picks a free one)" },
  dataDir: { flag: "--data-dir <dir>", env: "HEARTH_DATA_DIR", default: "./data", description: "where the SQLite database and generated demo models live" },
  configPath: { flag: "--config <file>", env: "HEARTH_CONFIG", default: "./models.config.json", description: "the model registry (falls back to the bundled demo registry)" },
  logLevel: { flag: "--log-level <level>", env: "HEARTH_LOG_LEVEL", default: "info", description: "fatal, error, warn, info, debug, trace or silent" },
  diemResetHourUtc: { flag: "--diem-reset-hour <hour>", env: "HEARTH_DIEM_RESET_HOUR", default: "0", description: "UTC hour at which DIEM allocations refill and daily key limits reset" },
  videoWorkers: { flag: "--video-workers <n>", env: "HEARTH_VIDEO_WORKERS", default: "1", description: "video jobs generated at the same time (the rest wait in the durable queue)" },
} as const;

export const ServerConfig = z.object({
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  dataDir: z.string().min(1),
  configPath: z.string().min(1),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
  diemResetHourUtc: z.coerce.number().int().min(0).max(23).default(0),
  /** Non-streaming chat requests that run longer than this answer 504. */
  requestTimeoutMs: z.number().int().positive().default(120_000),
  /** Time given to in-flight requests on SIGTERM before they are cut. */
  shutdownGraceMs: z.number().int().nonnegative().default(10_000),
  /** Video jobs run at the same time; queued jobs wait in SQLite. */
  videoWorkers: z.coerce.number().int().min(1).max(64).default(1),
  /** Finished videos not fetched and completed are deleted after this long. */
  videoRetentionMs: z.number().int().positive().default(24 * 3600_000),
  /** A job interrupted by this many restarts fails (and is refunded) instead of starting again. */
  jobMaxAttempts: z.number().int().min(1).default(3),
});
export type ServerConfig = z.infer<typeof ServerConfig>;

export type ServerSettingName = keyof typeof SERVER_SETTINGS;

/** Flags win over environment variables, which win over defaults. */
export function loadServerConfig(flags: Partial<Record<ServerSettingName, string | undefined>> = {}, env = process.env): ServerConfig {
  const raw: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(SERVER_SETTINGS) as [ServerSettingName, (typeof SERVER_SETTINGS)[ServerSettingName]][]) {
    raw[name] = flags[name] ?? env[setting.env] ?? setting.default;
  }
  if (!flags.configPath && !env.HEARTH_CONFIG && !existsSync(resolve(String(raw.configPath)))) {
    raw.configPath = resolve(PACKAGE_ROOT, "models.config.json");
  }
  const parsed = ServerConfig.safeParse(raw);
  if (!parsed.success) throw new ConfigError(describeIssues("settings", parsed.error));
  return { ...parsed.data, dataDir: resolve(parsed.data.dataDir), configPath: resolve(parsed.data.configPath) };
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

function describeIssues(source: string, error: z.ZodError): string {
  return error.issues.map((issue) => `${source}: ${issue.path.join(".") || "(root)"}: ${issue.message}`).join("\n");
}

// ---------------------------------------------------------------------------------------
// models.config.json

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
export const ModelPricing = z.union([TextPricing, EmbeddingPricing, ImagePricing, AudioSecondPricing, CharacterPricing, VideoSecondPricing, VideoDurationPricing]);

const LlamaSettings = z.strictObject({
  /** Tokens per sequence. Explicit, because "auto" grows toward the training context. */
  contextSize: z.number().int().min(64).default(4096),
  /** Parallel sequences of one context: concurrent requests batched together. */
  sequences: z.number().int().min(1).max(64).default(4),
  /** "auto" offloads what fits on the GPU; 0 keeps everything on the CPU. */
  gpuLayers: z.union([z.literal("auto"), z.literal("max"), z.number().int().min(0)]).default("auto"),
  /** CPU threads; 0 lets llama.cpp decide. Tiny models run best on one. */
  threads: z.number().int().min(0).default(0),
  batchSize: z.number().int().min(1).optional(),
  flashAttention: z.boolean().default(false),
});
export type LlamaSettings = z.infer<typeof LlamaSettings>;

/** Image models (and the image pipeline under video models): the ONNX diffusion engine. */
const ImageSettings = z.strictObject({
  /** auto: from scheduler/scheduler_config.json (Euler ancestral and LCM are kept, anything else runs Euler). */
  scheduler: z.enum(["auto", "euler", "euler_ancestral", "lcm"]).default("auto"),
  defaultSteps: z.number().int().min(1).max(150).default(20),
  maxSteps: z.number().int().min(1).max(150).default(50),
  /** Classifier-free guidance runs when cfg_scale > 1 (SD-Turbo and LCM models use 1 or less). */
  defaultCfgScale: z.number().min(0).max(20).default(7.5),
  defaultWidth: z.number().int().positive().default(512),
  defaultHeight: z.number().int().positive().default(512),
  maxWidth: z.number().int().positive().max(4096).default(1280),
  maxHeight: z.number().int().positive().max(4096).default(1280),
  widthHeightDivisor: z.number().int().positive().default(8),
  promptCharacterLimit: z.number().int().positive().default(2048),
  /** Worker threads, each with its own ONNX sessions: generations that run at the same time. */
  workers: z.number().int().min(1).max(16).default(1),
  /** onnxruntime intra-op threads per worker; 0 lets onnxruntime decide. */
  threads: z.number().int().min(0).default(0),
  /** onnxruntime execution providers in order of preference, e.g. ["cuda", "cpu"]. */
  executionProviders: z.array(z.string().min(1)).default(["cpu"]),
  /**
   * A diffusers safety checker (ONNX: clip_input + images -> has_nsfw_concepts), a model.onnx
   * file or a directory holding one (resolved like `file`). Default: safety_checker/model.onnx
   * inside the model, if present.
   */
  safetyChecker: z.string().optional(),
});
export type ImageSettings = z.infer<typeof ImageSettings>;

/** Video models: frames from the image pipeline, encoded to H.264 MP4. */
const VideoSettings = z.strictObject({
  durations: z.array(z.string().regex(/^\d+s$/, "durations look like \"5s\"")).min(1).default(["1s", "2s", "3s", "4s", "5s"]),
  /** Resolution name -> frame height in pixels (the width follows the aspect ratio). */
  resolutions: z.record(z.string(), z.number().int().positive()).default({ "256p": 256, "512p": 512 }),
  defaultResolution: z.string().default("256p"),
  aspectRatios: z.array(z.string().regex(/^\d+:\d+$/)).min(1).default(["1:1", "16:9", "9:16", "4:3", "3:4"]),
  defaultAspectRatio: z.string().default("1:1"),
  fps: z.number().int().min(1).max(60).default(8),
  maxFps: z.number().int().min(1).max(60).default(30),
  /** Seconds between denoised keyframes; the frames between them interpolate the keyframes' latents. */
  keyframeSeconds: z.number().positive().default(1),
});
export type VideoSettings = z.infer<typeof VideoSettings>;

/** Embedding models, GGUF (llama) or ONNX (transformers). */
const EmbeddingSettings = z.strictObject({
  /** auto: sentence-transformers' 1_Pooling/config.json when present, else mean (GGUF: the model's own pooling). */
  pooling: z.enum(["auto", "mean", "cls", "last"]).default("auto"),
  normalize: z.boolean().default(true),
  /** Matryoshka-trained models: `dimensions` truncates and renormalises. Others accept only their native size. */
  supportsCustomDimensions: z.boolean().default(false),
  /** Tokens per input; default: the tokenizer's model_max_length (GGUF: the context size). */
  maxInputTokens: z.number().int().positive().optional(),
  /** Inputs evaluated in one forward pass. */
  batchSize: z.number().int().min(1).max(2048).default(32),
  /** GGUF: embedding contexts evaluating inputs in parallel (node-llama-cpp reads one pooled vector per context). */
  parallel: z.number().int().min(1).max(64).default(2),
  /** CPU threads (GGUF per context, ONNX intra-op); 0 lets the runtime decide. */
  threads: z.number().int().min(0).default(0),
  /** transformers.js weights file: fp32 -> onnx/model.onnx, q8 -> model_quantized.onnx, fp16, q4... */
  dtype: z.string().default("fp32"),
});
export type EmbeddingSettings = z.infer<typeof EmbeddingSettings>;

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
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "model ids use letters, digits, '.', '_' and '-'"),
  name: z.string().optional(),
  description: z.string().optional(),
  type: z.enum(["text", "embedding", "tts", "asr", "image", "video", "upscale", "inpaint", "music"]),
  /** llama: GGUF (chat, embedding); onnx-diffusion: diffusers ONNX export (image, video); transformers: transformers.js ONNX (embedding). */
  backend: z.enum(["llama", "onnx-diffusion", "transformers"]),
  /** Model file or directory; relative paths resolve against this config file; `{dataDir}` expands to the data directory. */
  file: z.string().optional(),
  /** A demo fixture Hearth generates at `file` when it is missing (tiny random weights). */
  generate: z.enum(["tiny-chat", "tiny-reasoning", "tiny-sd", "tiny-embedding", "tiny-embedding-gguf"]).optional(),
  llama: LlamaSettings.default(LlamaSettings.parse({})),
  image: ImageSettings.default(ImageSettings.parse({})),
  video: VideoSettings.default(VideoSettings.parse({})),
  embedding: EmbeddingSettings.default(EmbeddingSettings.parse({})),
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
  pricing: ModelPricing.optional(),
  /** Rate-limit tier: text models XS/S/M/L. */
  tier: z.enum(["XS", "S", "M", "L"]).default("S"),
  deprecation: z
    .strictObject({ date: z.iso.datetime({ offset: true }).or(z.iso.date()), warning: z.string(), replacementModelId: z.string().optional() })
    .optional(),
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
    config.models.forEach((model, index) => {
      if (seen.has(model.id)) ctx.addIssue({ code: "custom", path: ["models", index, "id"], message: `duplicate model id "${model.id}"` });
      seen.add(model.id);
      if (model.type === "text" && model.pricing && !("output" in model.pricing))
        ctx.addIssue({ code: "custom", path: ["models", index, "pricing"], message: "text models are priced per million input and output tokens: { input, output, cache_input?, cache_write? }" });
      if (model.backend === "llama" && !model.file)
        ctx.addIssue({ code: "custom", path: ["models", index, "file"], message: "a llama model needs a GGUF file" });
      const served = BACKEND_TYPES[model.backend];
      if (!served.includes(model.type))
        ctx.addIssue({ code: "custom", path: ["models", index, "backend"], message: `the ${model.backend} backend serves ${served.join(" and ")} models, not ${model.type}` });
      if (model.backend !== "llama" && !model.file)
        ctx.addIssue({ code: "custom", path: ["models", index, "file"], message: `a ${model.backend} model needs its model directory in "file"` });
      const pricingShape = model.pricing ? PRICING_SHAPES[model.type] : undefined;
      if (pricingShape && !pricingShape.keys.some((key) => key in model.pricing!))
        ctx.addIssue({ code: "custom", path: ["models", index, "pricing"], message: `${model.type} models are priced ${pricingShape.message}` });
      if (model.type === "video") {
        if (!(model.video.defaultResolution in model.video.resolutions))
          ctx.addIssue({ code: "custom", path: ["models", index, "video", "defaultResolution"], message: "must be one of video.resolutions" });
        if (!model.video.aspectRatios.includes(model.video.defaultAspectRatio))
          ctx.addIssue({ code: "custom", path: ["models", index, "video", "defaultAspectRatio"], message: "must be one of video.aspectRatios" });
      }
      if (model.image.defaultSteps > model.image.maxSteps)
        ctx.addIssue({ code: "custom", path: ["models", index, "image", "defaultSteps"], message: "must not exceed image.maxSteps" });
    });
  });

/** The model types each backend serves. */
const BACKEND_TYPES: Record<ModelEntry["backend"], ModelEntry["type"][]> = {
  llama: ["text", "embedding"],
  "onnx-diffusion": ["image", "video"],
  transformers: ["embedding"],
};

/** Which pricing shape each priced model type takes (text is checked above). */
const PRICING_SHAPES: Partial<Record<ModelEntry["type"], { keys: string[]; message: string }>> = {
  image: { keys: ["generation"], message: "per image: { generation, steps? }" },
  embedding: { keys: ["input"], message: "per million input tokens: { input }" },
  video: { keys: ["per_second", "durations"], message: "per second ({ per_second, resolutions? }) or by duration tier ({ durations })" },
};
export type ModelsConfig = z.infer<typeof ModelsConfig>;

/** Reads and validates models.config.json; a bad file stops start-up with the offending field named. */
export function loadModelsConfig(configPath: string, dataDir: string): ModelsConfig {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(configPath, "utf8"));
  } catch (error) {
    throw new ConfigError(`${configPath}: ${(error as Error).message}`);
  }
  const parsed = ModelsConfig.safeParse(json);
  if (!parsed.success) throw new ConfigError(describeIssues(configPath, parsed.error));
  const base = dirname(configPath);
  for (const model of parsed.data.models) {
    if (model.file) model.file = resolveModelPath(model.file, base, dataDir);
    if (model.image.safetyChecker) model.image.safetyChecker = resolveModelPath(model.image.safetyChecker, base, dataDir);
  }
  return parsed.data;
}

function resolveModelPath(file: string, base: string, dataDir: string): string {
  const expanded = file.replaceAll("{dataDir}", dataDir);
  return isAbsolute(expanded) ? expanded : resolve(base, expanded);
}
