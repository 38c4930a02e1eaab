import { z } from "zod";

/** The per-backend sections of a models.config.json entry (llama, onnx, image, speech, ...), with their defaults. */

export const LlamaSettings = z.strictObject({
  /** Tokens per sequence. Explicit, because "auto" grows toward the training context. */
  contextSize: z.number().int().min(64).default(4096),
  /** Parallel sequences of one context: concurrent requests batched together. */
  sequences: z.number().int().min(1).max(64).default(4),
  /** "auto" offloads what fits on the GPU; 0 keeps everything on the CPU. */
  gpuLayers: z.union([z.literal("auto"), z.literal("max"), z.number().int().min(0)]).default("auto"),
  /** CPU threads; 0: one per available core. Tiny models run best on one. */
  threads: z.number().int().min(0).default(0),
  /**
   * Threads for a decode of one token (a lone stream): "auto" uses one fewer than `threads` when
   * they take every core and libuv's pool has more than one thread (decodes then start from
   * changing threads), else `threads`. See threadsForBatch.ts.
   */
  singleTokenThreads: z.union([z.literal("auto"), z.number().int().min(1)]).default("auto"),
  batchSize: z.number().int().min(1).optional(),
  /**
   * Whether the text of one decode step goes to the clients while the next step decodes (true) or
   * before it starts (false). "auto": overlap when the whole model is on a GPU or the threads leave
   * a core free. See overlapsOutputWithDecode in StepBarrier.ts.
   */
  overlapOutput: z.union([z.literal("auto"), z.boolean()]).default("auto"),
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
export const ExecutionProviders = z.union([z.literal("auto"), z.array(z.string().min(1)).min(1)]).default("auto");
export type ExecutionProviders = z.infer<typeof ExecutionProviders>;

/** Image models (and the image pipeline under video models): the ONNX diffusion engine. */
export const ImageSettings = z.strictObject({
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
export const VideoSettings = z.strictObject({
  durations: z
    .array(z.string().regex(/^\d+s$/, 'durations look like "5s"'))
    .min(1)
    .default(["1s", "2s", "3s", "4s", "5s"]),
  /** Resolution name -> frame height in pixels (the width follows the aspect ratio). */
  resolutions: z.record(z.string(), z.number().int().positive()).default({ "256p": 256, "512p": 512 }),
  defaultResolution: z.string().default("256p"),
  aspectRatios: z
    .array(z.string().regex(/^\d+:\d+$/))
    .min(1)
    .default(["1:1", "16:9", "9:16", "4:3", "3:4"]),
  defaultAspectRatio: z.string().default("1:1"),
  fps: z.number().int().min(1).max(60).default(8),
  maxFps: z.number().int().min(1).max(60).default(30),
  /** Seconds between denoised keyframes; the frames between them interpolate the keyframes' latents. */
  keyframeSeconds: z.number().positive().default(1),
});
export type VideoSettings = z.infer<typeof VideoSettings>;

/** Vision-language chat models (backend "transformers", type "text"): how many pictures and videos one request may carry. */
export const VisionSettings = z.strictObject({
  /** Most image_url parts in one request. */
  maxImages: z.number().int().min(1).max(64).default(4),
  /** Largest picture, in pixels (width × height), after decoding; a larger one is a 413 naming its part. */
  maxImagePixels: z.number().int().min(1).default(16_777_216),
  /** Frames sampled from each video_url part (evenly over its length); 0: the model takes no video. */
  videoFrames: z.number().int().min(0).max(32).default(0),
  /** Most video_url parts in one request. */
  maxVideos: z.number().int().min(0).max(8).default(1),
  /** The context window (prompt with its image tokens, and the answer); unset: the model's max_position_embeddings. */
  contextSize: z.number().int().min(64).optional(),
});
export type VisionSettings = z.infer<typeof VisionSettings>;

/** Embedding models, GGUF (llama) or ONNX (transformers). */
export const EmbeddingSettings = z.strictObject({
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

/** Super-resolution models (type "upscale"). */
export const UpscaleSettings = z.strictObject({
  /** Input pixels per side of one tile: the model sees tiles of at most this size, so memory stays flat whatever the picture's size. */
  tileSize: z.number().int().min(16).max(2048).default(256),
  /** Input pixels each tile reads beyond its share on every side (and then drops), so no seam shows between tiles. */
  tileOverlap: z.number().int().min(0).max(256).default(16),
  /** The largest picture answered (width x height after scaling); the reference's limit. */
  maxOutputPixels: z.number().int().positive().default(16_777_216),
});
export type UpscaleSettings = z.infer<typeof UpscaleSettings>;

/** The six speech output formats (the reference's response_format values). */
export const SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

/**
 * Text-to-music models (type "music", served as audio jobs): the durations and formats a job may
 * ask for, advertised on GET /models in the reference's model_spec fields. The model runs with
 * the `onnx` block's dtype, threads and execution providers.
 */
export const MusicSettings = z.strictObject({
  /** Shortest clip a job may ask for, in whole seconds (duration_seconds below it is a 400). */
  minDurationSeconds: z.number().int().positive().default(1),
  /** Longest clip, in whole seconds: generation time grows with it (about frame rate x seconds decoder steps). */
  maxDurationSeconds: z.number().int().positive().default(30),
  /** The length of a clip when the job names none. */
  defaultDurationSeconds: z.number().int().positive().default(10),
  /** When set, the only durations accepted (the reference's duration_options); otherwise any whole number of seconds within min..max. */
  durationOptions: z.array(z.number().int().positive()).min(1).optional(),
  defaultFormat: z.enum(SPEECH_FORMATS).default("mp3"),
  supportedFormats: z.array(z.enum(SPEECH_FORMATS)).min(1).default(["mp3", "wav", "flac", "opus", "aac"]),
  /** The longest prompt, in characters (advertised as prompt_character_limit). */
  promptCharacterLimit: z.number().int().positive().default(500),
  /**
   * Seconds of extra audio generated for `loop: true` and crossfaded from the clip's end into
   * its start, so the file plays around without a seam; 0 turns looping off (supports_loop false).
   */
  loopCrossfadeSeconds: z.number().min(0).max(5).default(0.5),
});
export type MusicSettings = z.infer<typeof MusicSettings>;

/** Local ONNX models (kokoro, vits, whisper, the speaker encoder): which weights file, how many CPU threads, which execution providers. */
export const OnnxSettings = z.strictObject({
  /** Weights variant, as transformers.js names them: fp32 reads onnx/model.onnx, q8 model_quantized.onnx, fp16 model_fp16.onnx, q4 model_q4.onnx. */
  dtype: z.enum(["fp32", "fp16", "q8", "int8", "uint8", "q4", "q4f16", "bnb4"]).default("fp32"),
  /** onnxruntime intra-op threads; 0 lets onnxruntime decide. Tiny models run best on one. */
  threads: z.number().int().min(0).default(0),
  /** "auto" (CUDA when it works here, else the CPU) or a list in order of preference, e.g. ["cuda", "cpu"]. */
  executionProviders: ExecutionProviders,
  /**
   * onnxruntime's CPU memory arena: buffers kept for reuse across runs (faster) that the process
   * holds at their peak, never shrinking (more memory). "auto": off for vision chat, whose prompts
   * of hundreds of image tokens grew it to 5.2 GB on a SmolVLM-256M shape (1.9 GB without it, each
   * question 25% slower), on for the rest.
   */
  memoryArena: z.union([z.literal("auto"), z.boolean()]).default("auto"),
});
export type OnnxSettings = z.infer<typeof OnnxSettings>;

/** Text-to-speech models (type "tts"). */
export const SpeechSettings = z.strictObject({
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
  supportedFormats: z
    .array(z.enum(SPEECH_FORMATS))
    .min(1)
    .default([...SPEECH_FORMATS]),
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
export const VoiceCloningSettings = z.strictObject({
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
export const TranscriptionSettings = z.strictObject({
  /** Audio longer than this is transcribed in overlapping windows (Whisper sees 30 s at a time). */
  chunkLengthSeconds: z.number().positive().max(30).default(30),
  strideLengthSeconds: z.number().positive().default(5),
  /** Word timestamps need the model's alignment heads (generation_config.alignment_heads). */
  wordTimestamps: z.boolean().default(true),
  /** Longest audio accepted, in seconds (413 above). */
  maxAudioSeconds: z
    .number()
    .positive()
    .default(3 * 3600),
  /**
   * openai/whisper's temperature fallback, at a request's temperature 0 (the standard's default):
   * a 30 s window whose text fails the two thresholds below is decoded again, sampled at each of
   * these temperatures in turn, and the first that passes (or the last) is kept. [] decodes
   * greedily once. A request with a temperature above 0 samples at it, once.
   */
  fallbackTemperatures: z.array(z.number().positive().max(1)).max(10).default([0.2, 0.4, 0.6, 0.8, 1]),
  /** A window's text compressing more than this (zlib) is a repetition loop: fall back. */
  compressionRatioThreshold: z.number().positive().default(2.4),
  /** A window whose tokens' average log probability is below this is unlikely text: fall back. */
  logprobThreshold: z.number().max(0).default(-1),
  /** A window whose no-speech probability is above this, and whose text is below logprobThreshold, is silence: no text, no fallback. */
  noSpeechThreshold: z.number().min(0).max(1).default(0.6),
});
export type TranscriptionSettings = z.infer<typeof TranscriptionSettings>;

/**
 * One server of an upstream pool. Its key, when it has none of its own, is the pool's
 * (`upstream.apiKey` / `upstream.apiKeyEnv`).
 */
export const UpstreamReplica = z.strictObject({
  baseUrl: z.url().optional(),
  /** Environment variable holding this replica's base URL. */
  baseUrlEnv: z.string().min(1).optional(),
  /** Prefer apiKeyEnv; a literal key here is read as is. */
  apiKey: z.string().min(1).optional(),
  apiKeyEnv: z.string().min(1).optional(),
  /** Its share of the traffic relative to the others (2: twice the keys and twice the load of a replica of weight 1). */
  weight: z.number().positive("weight must be greater than 0").default(1),
  /** Requests this node sends it at once; a replica at its limit is skipped (unset: no limit). */
  maxInFlight: z.number().int().positive().optional(),
});
export type UpstreamReplica = z.infer<typeof UpstreamReplica>;

/** Active health checks of a pool of two or more replicas (GET {baseUrl}/models with the replica's key). */
export const UpstreamHealthCheck = z.strictObject({
  /** Between two checks of a replica that is in the pool. */
  intervalMs: z.number().int().min(50).default(10_000),
  /** A check that takes longer fails. */
  timeoutMs: z.number().int().min(10).default(2_000),
  /** First back-off of an ejected replica; it doubles with each failure in a row, up to maxEjectMs. */
  ejectMs: z.number().int().min(10).default(1_000),
  maxEjectMs: z.number().int().min(10).default(60_000),
});
export type UpstreamHealthCheck = z.infer<typeof UpstreamHealthCheck>;

/**
 * Another server speaking the same standard (/audio/speech, /chat/completions): another Hearth,
 * vLLM, llama-server or a hosted provider, or a pool of them (\`replicas\`). Without a base URL
 * (set directly or through \`baseUrlEnv\`, for every replica of a pool) the model is not served.
 */
export const UpstreamSettings = z
  .strictObject({
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
        /** The upstream model sees pictures: image_url parts are passed through unchanged. */
        vision: z.boolean().default(false),
        /** Most image_url parts in one request (with vision). */
        maxImages: z.number().int().min(1).max(256).default(8),
        /** The upstream model takes video: video_url parts are passed through unchanged. */
        videoInput: z.boolean().default(false),
        /** Most video_url parts in one request (with videoInput). */
        maxVideos: z.number().int().min(1).max(32).default(1),
      })
      .optional(),
    /**
     * Several servers of the same model: requests with a prompt_cache_key (or a long shared
     * system prompt) go to the same replica by rendezvous hashing, the rest to the least loaded;
     * a failing replica is ejected and checked until it answers again (docs/scaling.md).
     */
    replicas: z.array(UpstreamReplica).min(1, "list at least one replica").optional(),
    healthCheck: UpstreamHealthCheck.default(UpstreamHealthCheck.parse({})),
  })
  .superRefine((upstream, ctx) => {
    if (upstream.replicas && (upstream.baseUrl || upstream.baseUrlEnv))
      ctx.addIssue({ code: "custom", path: ["replicas"], message: "give either baseUrl/baseUrlEnv or replicas, not both (one base URL is a pool of one)" });
    for (const [index, replica] of (upstream.replicas ?? []).entries())
      if (!replica.baseUrl && !replica.baseUrlEnv) ctx.addIssue({ code: "custom", path: ["replicas", index], message: "a replica needs baseUrl or baseUrlEnv" });
    if (upstream.healthCheck.ejectMs > upstream.healthCheck.maxEjectMs)
      ctx.addIssue({ code: "custom", path: ["healthCheck", "ejectMs"], message: "must not exceed healthCheck.maxEjectMs" });
  });
export type UpstreamSettings = z.infer<typeof UpstreamSettings>;
