import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { SettlementMode, WalletConfig } from "./walletConfig.js";

/**
 * Configuration: the server settings (flags and environment) and the model registry
 * (models.config.json). This is the only module that reads process.env.
 */

export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Every setting with its flag, environment variable and description (shared by --help and docs/configuration.md). */
export const SERVER_SETTINGS = {
  host: { flag: "--host <host>", env: "HEARTH_HOST", default: "127.0.0.1", description: "interface to listen on (0.0.0.0 for the LAN)" },
  port: { flag: "--port <port>", env: "HEARTH_PORT", default: "8080", description: "TCP port (0 picks a free one)" },
  dataDir: { flag: "--data-dir <dir>", env: "HEARTH_DATA_DIR", default: "./data", description: "where the SQLite database and generated demo models live" },
  configPath: { flag: "--config <file>", env: "HEARTH_CONFIG", default: "./models.config.json", description: "the model registry (falls back to the bundled demo registry)" },
  logLevel: { flag: "--log-level <level>", env: "HEARTH_LOG_LEVEL", default: "info", description: "fatal, error, warn, info, debug, trace or silent" },
  diemResetHourUtc: { flag: "--diem-reset-hour <hour>", env: "HEARTH_DIEM_RESET_HOUR", default: "0", description: "UTC hour at which DIEM allocations refill and daily key limits reset" },
  maxUploadMb: { flag: "--max-upload-mb <mb>", env: "HEARTH_MAX_UPLOAD_MB", default: "25", description: "largest audio file accepted by /audio/transcriptions, /audio/translations and /audio/voices, and largest file or audio part in a chat message (413 above)" },
  metricsPort: {
    flag: "--metrics-port <port>",
    env: "HEARTH_METRICS_PORT",
    default: "",
    description: "also serve GET /metrics without authentication on this port (same host; 0 picks a free one); empty: only the operator-key route on the API port",
  },
  videoWorkers: { flag: "--video-workers <n>", env: "HEARTH_VIDEO_WORKERS", default: "1", description: "video jobs generated at the same time (the rest wait in the durable queue)" },
  preload: {
    flag: "--preload <ids>",
    env: "HEARTH_PRELOAD",
    default: "",
    description: 'comma-separated model ids to load at start-up ("all": every model), with a progress bar; a model that fails is reported and the server starts anyway',
  },
  keepAlive: {
    flag: "--keep-alive <seconds>",
    env: "HEARTH_KEEP_ALIVE",
    default: "300",
    description: "seconds a model stays loaded after its last request (a model's keepAlive overrides it); 0 unloads as soon as it is idle, -1 never unloads for idleness",
  },
  ramBudget: {
    flag: "--ram-budget <size>",
    env: "HEARTH_RAM_BUDGET",
    default: "",
    description: "RAM the loaded models may use together (e.g. 8GiB, 512MiB; a bare number is MiB); least recently used idle models are unloaded to make room; empty: no limit",
  },
  vramBudget: {
    flag: "--vram-budget <size>",
    env: "HEARTH_VRAM_BUDGET",
    default: "",
    description: "GPU memory the loaded models may use together, like --ram-budget; empty: no limit",
  },
  publicUrl: {
    flag: "--public-url <url>",
    env: "HEARTH_PUBLIC_URL",
    default: "",
    description: "the origin clients reach this node at (sign-in-with-x domain and uri, x402 resource URLs); empty: the addresses it listens on",
  },
  walletConfigPath: {
    flag: "--wallet-config <file>",
    env: "HEARTH_WALLET_CONFIG",
    default: "",
    description: "JSON file with the x402 top-up rails (pay-to, USDC asset, EIP-712 domain, chain RPC) and the crypto RPC networks; empty: no top-ups, no RPC proxy",
  },
  x402Settlement: {
    flag: "--x402-settlement <mode>",
    env: "HEARTH_X402_SETTLEMENT",
    default: "",
    description: "top-up settlement: onchain (credit once the transfer is mined), deferred (credit on the signature, submit before expiry) or off (development only); overrides the wallet config",
  },
  searchUrl: {
    flag: "--search-url <url>",
    env: "HEARTH_SEARCH_URL",
    default: "",
    description: "base URL of a SearxNG instance (its JSON API, format=json enabled) used for chat web search; empty: web search off",
  },
  searchPriceUsd: { flag: "--search-price <usd>", env: "HEARTH_SEARCH_PRICE", default: "0.01", description: "charge per web search a chat request runs (USD, or the same amount of DIEM)" },
  webScraping: {
    flag: "--web-scraping <on|off>",
    env: "HEARTH_WEB_SCRAPING",
    default: "off",
    description: "let chat requests ask the node to fetch URLs from the user's message (enable_web_scraping); the node fetches any address it can reach, LAN included",
  },
  scrapePriceUsd: { flag: "--scrape-price <usd>", env: "HEARTH_SCRAPE_PRICE", default: "0.01", description: "charge per web page scraped successfully for a chat request (USD, or the same amount of DIEM)" },
  errorFormat: {
    flag: "--error-format <format>",
    env: "HEARTH_ERROR_FORMAT",
    default: "provider",
    description: 'error bodies: provider ({"error": "<message>"}, the reference API\'s shape) or standard ({"error": {"message", "type", "code", "param"}}, what the chat-completions SDKs read)',
  },
} as const;

/** Secrets read from the environment only (never flags: they would show in the process list). */
export const SECRET_ENV = {
  evmSettlerKey: "HEARTH_X402_EVM_SETTLER_KEY",
  solanaFeePayerKey: "HEARTH_X402_SOLANA_FEE_PAYER_KEY",
} as const;

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** A memory size: bytes as a number, or a string such as "8GiB", "512MB", "1.5 GiB" (a bare number is MiB); "" or "none": no limit (null). */
export const ByteSize = z
  .union([z.number().nonnegative(), z.string()])
  .optional()
  .transform((value, ctx): number | null => {
    if (value === undefined || value === null) return null;
    if (typeof value === "number") return Math.floor(value);
    const text = value.trim().toLowerCase();
    if (text === "" || text === "none" || text === "unlimited") return null;
    const match = /^(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?$/.exec(text);
    if (!match) {
      ctx.addIssue({ code: "custom", message: `expected a size such as 8GiB, 512MiB or 4096 (MiB), got "${value}"` });
      return z.NEVER;
    }
    return Math.floor(Number(match[1]) * SIZE_UNITS[match[2] ?? "mib"]!);
  });

export const ServerConfig = z.object({
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  dataDir: z.string().min(1),
  configPath: z.string().min(1),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
  diemResetHourUtc: z.coerce.number().int().min(0).max(23).default(0),
  /** Largest uploaded audio file (transcription input, voice samples), in MB; larger uploads answer 413. */
  maxUploadMb: z.coerce.number().positive().max(1024).default(25),
  /** Longest text extracted from one file part of a chat message, in characters (400 above). */
  maxFileChars: z.number().int().positive().default(1_000_000),
  /** Non-streaming chat requests that run longer than this answer 504. */
  requestTimeoutMs: z.number().int().positive().default(120_000),
  /** Time given to in-flight requests on SIGTERM before they are cut. */
  shutdownGraceMs: z.number().int().nonnegative().default(10_000),
  /** Public origin (scheme, host, optional port and path prefix); unset: the listen addresses. */
  publicUrl: z
    .url({ protocol: /^https?$/ })
    .refine((url) => !new URL(url).search && !new URL(url).hash, "no query or fragment")
    .optional(),
  wallet: WalletConfig.default(WalletConfig.parse({})),
  /** A second listener serving only GET /metrics, without auth (for a Prometheus scraper on a private network). */
  metricsPort: z.coerce.number().int().min(0).max(65535).optional(),
  /** Video jobs run at the same time; queued jobs wait in SQLite. */
  videoWorkers: z.coerce.number().int().min(1).max(64).default(1),
  /** Finished videos not fetched and completed are deleted after this long. */
  videoRetentionMs: z.number().int().positive().default(24 * 3600_000),
  /** A job interrupted by this many restarts fails (and is refunded) instead of starting again. */
  jobMaxAttempts: z.number().int().min(1).default(3),
  /** SearxNG base URL for chat web search; unset: no search provider. */
  searchUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** Per web search and per successfully scraped page, in whole USD (DIEM at the same amount). */
  searchPriceUsd: z.coerce.number().nonnegative().default(0.01),
  scrapePriceUsd: z.coerce.number().nonnegative().default(0.01),
  /** The shape of error bodies: the reference API's `{error: "<message>"}`, or the chat-completions standard's nested object. */
  errorFormat: z.enum(["provider", "standard"]).default("provider"),
  /** Whether enable_web_scraping is allowed (off: it is a 400 naming the field). */
  webScraping: z.enum(["on", "off"]).default("off"),
  /** How long a search or a page fetch may take. */
  searchTimeoutMs: z.number().int().positive().default(10_000),
  /** Seconds an idle model stays loaded (ModelEntry.keepAlive overrides); 0: unload when idle; -1: never for idleness. */
  keepAlive: z.coerce.number().int().min(-1).default(300),
  /** Model ids loaded at start-up by `hearth serve` ("all": every model); they then follow the keep-alive like any other. */
  preload: z
    .string()
    .default("")
    .transform((ids) => ids.split(",").map((id) => id.trim()).filter(Boolean)),
  /** Memory the loaded models may use together, in bytes; null: no limit. */
  ramBudget: ByteSize,
  vramBudget: ByteSize,
  /** A model whose load failed answers 503 with the cause for this long before the next request retries the load. */
  modelRetryMs: z.number().int().nonnegative().default(5_000),
  /** How long a load waits for busy models to finish when the memory budget is full, before answering 503. */
  modelLoadWaitMs: z.number().int().nonnegative().default(30_000),
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
  raw.publicUrl = raw.publicUrl || undefined;
  raw.searchUrl = raw.searchUrl || undefined;
  raw.metricsPort = raw.metricsPort || undefined;
  raw.wallet = loadWalletConfig(String(raw.walletConfigPath ?? ""), String(raw.x402Settlement ?? ""), env);
  delete raw.walletConfigPath;
  delete raw.x402Settlement;
  const parsed = ServerConfig.safeParse(raw);
  if (!parsed.success) throw new ConfigError(describeIssues("settings", parsed.error));
  return { ...parsed.data, dataDir: resolve(parsed.data.dataDir), configPath: resolve(parsed.data.configPath) };
}

/** The wallet config file (if any), with the settlement override and the secrets from the environment. */
export function loadWalletConfig(path: string, settlement: string, env: Record<string, string | undefined> = process.env): WalletConfig {
  let json: Record<string, any> = {};
  if (path) {
    try {
      json = JSON.parse(readFileSync(resolve(path), "utf8")) as Record<string, any>;
    } catch (error) {
      throw new ConfigError(`${path}: ${(error as Error).message}`);
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) throw new ConfigError(`${path}: expected a JSON object`);
  }
  const x402 = { ...(json.x402 as Record<string, any> | undefined) };
  if (settlement) {
    const mode = SettlementMode.safeParse(settlement);
    if (!mode.success) throw new ConfigError(`settings: x402Settlement: expected onchain, deferred or off, got "${settlement}"`);
    x402.settlement = mode.data;
  }
  const evmKey = env[SECRET_ENV.evmSettlerKey];
  if (evmKey && x402.base && typeof x402.base === "object") x402.base = { ...x402.base, settlerPrivateKey: evmKey };
  const solanaKey = env[SECRET_ENV.solanaFeePayerKey];
  if (solanaKey && x402.solana && typeof x402.solana === "object") x402.solana = { ...x402.solana, feePayerSecretKey: solanaKey };
  const parsed = WalletConfig.safeParse({ ...json, x402 });
  if (!parsed.success) throw new ConfigError(describeIssues(path || "wallet config", parsed.error));
  return parsed.data;
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
  /** CPU threads; 0: one per available core. Tiny models run best on one. */
  threads: z.number().int().min(0).default(0),
  batchSize: z.number().int().min(1).optional(),
  /** llama.cpp's flash attention: "auto" (llama.cpp's own default) uses it where the backend supports it. */
  flashAttention: z.union([z.boolean(), z.literal("auto")]).default("auto"),
});
export type LlamaSettings = z.infer<typeof LlamaSettings>;

/**
 * Where onnxruntime runs an ONNX model. "auto": on CUDA when onnxruntime-node's CUDA provider
 * library is installed (`npm run onnx:cuda`) and a test session runs on it, else on the CPU.
 * A list names providers in order of preference; one that does not work here is skipped with a
 * warning (["cuda", "cpu"]: CUDA, else the CPU), and a list left empty fails the load (["cuda"]:
 * CUDA or nothing).
 */
const ExecutionProviders = z.union([z.literal("auto"), z.array(z.string().min(1)).min(1)]).default("auto");
export type ExecutionProviders = z.infer<typeof ExecutionProviders>;

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
  /** onnxruntime execution providers: "auto" (CUDA when it works here, else the CPU) or a list in order of preference, e.g. ["cuda", "cpu"]. */
  executionProviders: ExecutionProviders,
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
  /** ONNX (transformers backend) execution providers: "auto" or a list, as image.executionProviders. GGUF models use llama.gpuLayers. */
  executionProviders: ExecutionProviders,
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

/** The six speech output formats (the reference's response_format values). */
export const SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

/** Local ONNX models (kokoro, vits, whisper, the speaker encoder): which weights file, how many CPU threads, which execution providers. */
const OnnxSettings = z.strictObject({
  /** Weights variant, as transformers.js names them: fp32 reads onnx/model.onnx, q8 model_quantized.onnx, fp16 model_fp16.onnx, q4 model_q4.onnx. */
  dtype: z.enum(["fp32", "fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4"]).default("fp32"),
  /** onnxruntime intra-op threads; 0 lets onnxruntime decide. Tiny models run best on one. */
  threads: z.number().int().min(0).default(0),
  /** "auto" (CUDA when it works here, else the CPU) or a list in order of preference, e.g. ["cuda", "cpu"]. */
  executionProviders: ExecutionProviders,
});
export type OnnxSettings = z.infer<typeof OnnxSettings>;

/** Text-to-speech models (type "tts"). */
const SpeechSettings = z.strictObject({
  /**
   * Voices offered. Local engines list the voices whose files exist (Kokoro: voices/<name>.bin);
   * set this to offer a subset. Upstream models have no files: list the upstream's voices here.
   */
  voices: z.array(z.string().min(1).max(512)).optional(),
  /** Used when a request names no voice; defaults to the first voice listed. */
  defaultVoice: z.string().min(1).optional(),
  /**
   * The standard's voice names (alloy, onyx, ...) or any other name -> one of this model's voices.
   * Merged over the backend's default map (GET /models shows the result as voice_aliases).
   */
  voiceAliases: z.record(z.string().min(1).max(512), z.string().min(1).max(512)).optional(),
  defaultFormat: z.enum(SPEECH_FORMATS).default("mp3"),
  supportedFormats: z.array(z.enum(SPEECH_FORMATS)).min(1).default([...SPEECH_FORMATS]),
  /** Capabilities advertised on GET /models?type=tts; unsupported request parameters are ignored. */
  supportsPromptParam: z.boolean().default(false),
  supportsTemperatureParam: z.boolean().default(false),
  supportsTopPParam: z.boolean().default(false),
  /** Accept any voice id (passed to the engine) besides the listed voices. */
  supportsCustomVoiceId: z.boolean().default(false),
  /** Longest piece of text synthesised in one model call: sentences are split further at commas, then spaces. */
  maxChunkCharacters: z.number().int().min(20).max(4096).default(300),
  /**
   * Kokoro: grapheme-to-phoneme. "auto" uses the \`phonemizer\` package (espeak-ng) when it is
   * installed and Hearth's built-in English rules otherwise; "espeak" requires the package.
   */
  phonemizer: z.enum(["auto", "espeak", "fallback"]).default("auto"),
});
export type SpeechSettings = z.infer<typeof SpeechSettings>;

/** Voice cloning (POST /audio/voices) for a local Kokoro-style model: a speaker encoder maps a sample to a style vector. */
const VoiceCloningSettings = z.strictObject({
  /** Speaker-encoder model directory (config.json, preprocessor_config.json, onnx/model.onnx: mel [1, 80, frames] -> style [1, 256]). */
  encoder: z.string().min(1),
  /** A demo encoder Hearth generates at \`encoder\` when it is missing (random weights). */
  generate: z.enum(["tiny-speaker-encoder"]).optional(),
  /** Containers accepted as reference samples (ffmpeg's demuxer names are mapped to these); others are 400s. */
  acceptedFormats: z.array(z.string()).default(["mp3", "wav", "flac", "m4a", "ogg", "webm", "aac"]),
  /** Hard limits on the sample; below the minimum the clone is refused. */
  minSampleSeconds: z.number().positive().default(1),
  maxSampleSeconds: z.number().positive().default(60),
  /** Advertised as voice_cloning.min_sample_seconds: the length that gives an intelligible clone. */
  recommendedSampleSeconds: z.number().positive().default(5),
  /** A handle unused for this many days expires (each use resets the window). */
  retentionDays: z.number().positive().default(30),
});
export type VoiceCloningSettings = z.infer<typeof VoiceCloningSettings>;

/** Speech-to-text models (type "asr"). */
const TranscriptionSettings = z.strictObject({
  /** Audio longer than this is transcribed in overlapping windows (Whisper sees 30 s at a time). */
  chunkLengthSeconds: z.number().positive().max(30).default(30),
  strideLengthSeconds: z.number().positive().default(5),
  /** Word timestamps need the model's alignment heads (generation_config.alignment_heads). */
  wordTimestamps: z.boolean().default(true),
  /** Longest audio accepted, in seconds (413 above). */
  maxAudioSeconds: z.number().positive().default(3 * 3600),
});
export type TranscriptionSettings = z.infer<typeof TranscriptionSettings>;

/**
 * Another server speaking the same standard (/audio/speech, /chat/completions): another Hearth,
 * vLLM, llama-server or a hosted provider. Without a base URL (set directly or through \`baseUrlEnv\`) the model is not served.
 */
const UpstreamSettings = z.strictObject({
  baseUrl: z.url().optional(),
  /** Environment variable holding the base URL (e.g. https://host/api/v1). */
  baseUrlEnv: z.string().min(1).optional(),
  /** Prefer apiKeyEnv; a literal key here is read as is. */
  apiKey: z.string().min(1).optional(),
  apiKeyEnv: z.string().min(1).optional(),
  /** The model id at the upstream (defaults to this entry's id). */
  model: z.string().min(1).optional(),
  timeoutMs: z.number().int().positive().default(120_000),
  /**
   * Text models: the upstream model's context window. It bounds the credit hold of a request
   * without max_tokens; unset, it is read from the upstream's GET /models list (the entry whose
   * id is `model`: context_length or max_model_len) when the model loads, else 8192.
   */
  contextSize: z.number().int().min(64).optional(),
  /** Text models: what the upstream model can do (requests for anything else are refused here, before the upstream). */
  features: z
    .strictObject({
      functionCalling: z.boolean().default(true),
      responseSchema: z.boolean().default(true),
      logprobs: z.boolean().default(true),
      /** The model thinks (reasoning_content); reasoning_effort is then forwarded. */
      reasoning: z.boolean().default(false),
      /** Thinking can be switched off (reasoning_effort "none" is forwarded). */
      reasoningToggle: z.boolean().default(false),
      /** min_temp / max_temp are forwarded (Hearth, llama.cpp-based servers). */
      dynamicTemperature: z.boolean().default(false),
      /** Most choices (n) one request may ask for. */
      maxChoices: z.number().int().min(1).max(128).default(8),
    })
    .optional(),
});
export type UpstreamSettings = z.infer<typeof UpstreamSettings>;

/** Which model types each backend serves. */
/** Which model types each backend serves. llama: GGUF (chat, embedding); onnx-diffusion: diffusers ONNX export (image, video); transformers: transformers.js ONNX encoders (embedding). */
export const BACKEND_TYPES = Object.freeze({
  llama: ["text", "embedding"],
  "onnx-diffusion": ["image", "video"],
  transformers: ["embedding"],
  kokoro: ["tts"],
  vits: ["tts"],
  whisper: ["asr"],
  upstream: ["tts", "text"],
} as const satisfies Record<string, readonly string[]>);
export type Backend = keyof typeof BACKEND_TYPES;

export const ModelEntry = z.strictObject({
  /** Letters, digits, '.', '_', '-'; '/' may separate segments (e.g. openai/whisper-large-v3). */
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/, "model ids use letters, digits, '.', '_' and '-' (and '/' between segments)"),
  name: z.string().optional(),
  description: z.string().optional(),
  /** Other names a request may use for this model (e.g. the standard's "whisper-1"); they win over the built-in standard names. */
  aliases: z.array(z.string().min(1).max(256)).default([]),
  type: z.enum(["text", "embedding", "tts", "asr", "image", "video", "upscale", "inpaint", "music"]),
  backend: z.enum(Object.keys(BACKEND_TYPES) as [Backend, ...Backend[]]),
  /**
   * Model file (GGUF) or model directory (ONNX layouts); relative paths resolve against this
   * config file; `{dataDir}` expands to the data directory.
   */
  file: z.string().optional(),
  /** A demo fixture Hearth generates at `file` when it is missing (tiny random weights). */
  generate: z.enum(["tiny-chat", "tiny-reasoning", "tiny-coder", "tiny-kokoro", "tiny-vits", "tiny-whisper", "tiny-sd", "tiny-embedding", "tiny-embedding-gguf"]).optional(),
  llama: LlamaSettings.default(LlamaSettings.parse({})),
  onnx: OnnxSettings.default(OnnxSettings.parse({})),
  speech: SpeechSettings.default(SpeechSettings.parse({})),
  voiceCloning: VoiceCloningSettings.optional(),
  transcription: TranscriptionSettings.default(TranscriptionSettings.parse({})),
  upstream: UpstreamSettings.optional(),
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
  /**
   * Seconds this model stays loaded after its last request (overrides --keep-alive);
   * 0: unload as soon as it is idle; -1: never unload for idleness.
   */
  keepAlive: z.number().int().min(-1).optional(),
  /** Rate-limit tier: text models XS/S/M/L. */
  tier: z.enum(["XS", "S", "M", "L"]).default("S"),
  deprecation: z
    .strictObject({ date: z.iso.datetime({ offset: true }).or(z.iso.date()), warning: z.string(), replacementModelId: z.string().optional() })
    .optional(),
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
      if (model.type === "text" && model.pricing && !("output" in model.pricing))
        ctx.addIssue({ code: "custom", path: ["models", index, "pricing"], message: "text models are priced per million input and output tokens: { input, output, cache_input?, cache_write? }" });
      if (model.backend === "llama" && !model.file)
        ctx.addIssue({ code: "custom", path: ["models", index, "file"], message: "a llama model needs a GGUF file" });
      const types: readonly string[] = BACKEND_TYPES[model.backend];
      if (!types.includes(model.type))
        ctx.addIssue({ code: "custom", path: ["models", index, "backend"], message: `the ${model.backend} backend serves ${types.join(" and ")} models, not ${model.type}` });
      if (model.backend !== "llama" && model.backend !== "upstream" && !model.file)
        ctx.addIssue({ code: "custom", path: ["models", index, "file"], message: `a ${model.backend} model needs its model directory in "file"` });
      if (model.backend === "upstream" && !model.upstream)
        ctx.addIssue({ code: "custom", path: ["models", index, "upstream"], message: "an upstream model needs upstream.baseUrl or upstream.baseUrlEnv" });
      if (model.voiceCloning && model.backend !== "kokoro")
        ctx.addIssue({ code: "custom", path: ["models", index, "voiceCloning"], message: "voice cloning runs on Kokoro-style models (backend kokoro)" });
      if (model.type === "tts" && model.pricing && !("per_thousand_characters" in model.pricing) && !(Object.keys(model.pricing).join() === "input"))
        ctx.addIssue({ code: "custom", path: ["models", index, "pricing"], message: "tts models are priced per thousand characters { per_thousand_characters } (or per million characters { input })" });
      if (model.type === "asr" && model.pricing && !("per_audio_second" in model.pricing))
        ctx.addIssue({ code: "custom", path: ["models", index, "pricing"], message: "asr models are priced per audio second: { per_audio_second }" });
      if (model.speech.defaultVoice && model.speech.voices && !model.speech.voices.includes(model.speech.defaultVoice))
        ctx.addIssue({ code: "custom", path: ["models", index, "speech", "defaultVoice"], message: "the default voice must be one of speech.voices" });
      if (!model.speech.supportedFormats.includes(model.speech.defaultFormat))
        ctx.addIssue({ code: "custom", path: ["models", index, "speech", "defaultFormat"], message: "the default format must be one of speech.supportedFormats" });
      const pricingShape = model.pricing ? PRICING_SHAPES[model.type] : undefined;
      if (pricingShape && !pricingShape.keys.some((key) => key in model.pricing!))
        ctx.addIssue({ code: "custom", path: ["models", index, "pricing"], message: `${model.type} models are priced ${pricingShape.message}` });
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

/** The model types each backend serves. */
/** Which pricing shape each priced model type takes (text is checked above). */
const PRICING_SHAPES: Partial<Record<ModelEntry["type"], { keys: string[]; message: string }>> = {
  image: { keys: ["generation"], message: "per image: { generation, steps? }" },
  embedding: { keys: ["input"], message: "per million input tokens: { input }" },
  video: { keys: ["per_second", "durations"], message: "per second ({ per_second, resolutions? }) or by duration tier ({ durations })" },
};
export type ModelsConfig = z.infer<typeof ModelsConfig>;

/** Reads and validates models.config.json; a bad file stops start-up with the offending field named. */
export function loadModelsConfig(configPath: string, dataDir: string, env: NodeJS.ProcessEnv = process.env): ModelsConfig {
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
    if (model.voiceCloning) model.voiceCloning.encoder = resolveModelPath(model.voiceCloning.encoder, base, dataDir);
    if (model.upstream) resolveUpstream(model.upstream, env);
    if (model.image.safetyChecker) model.image.safetyChecker = resolveModelPath(model.image.safetyChecker, base, dataDir);
  }
  return parsed.data;
}

/** Fills an upstream's base URL and key from the environment variables it names (explicit values win). */
export function resolveUpstream(upstream: UpstreamSettings, env: NodeJS.ProcessEnv): void {
  if (!upstream.baseUrl && upstream.baseUrlEnv && env[upstream.baseUrlEnv]) upstream.baseUrl = env[upstream.baseUrlEnv];
  if (!upstream.apiKey && upstream.apiKeyEnv && env[upstream.apiKeyEnv]) upstream.apiKey = env[upstream.apiKeyEnv];
}

function resolveModelPath(file: string, base: string, dataDir: string): string {
  const expanded = file.replaceAll("{dataDir}", dataDir);
  return isAbsolute(expanded) ? expanded : resolve(base, expanded);
}
