import type { ReplicaStatus } from "./upstream/ReplicaPool.js";
import type { JsonSchemaSubset } from "./jsonSchemaSubset.js";
import type { ExecutionProviderChoice } from "./onnx/resolveExecutionProviders.js";

/**
 * Engine interfaces: plain options and callbacks, nothing about HTTP. Services translate
 * wire requests into these and engine results back into wire responses.
 */

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, as the chat-completions standard carries it. */
  arguments: string;
}

/** A picture as engines take it: interleaved 8-bit RGB. */
export interface DecodedImage {
  rgb: Uint8Array;
  width: number;
  height: number;
}

/**
 * A user message's content in order, where it carries pictures or video. Engines that see read
 * the decoded pixels; relays send `source` (the part as the caller wrote it) on unchanged.
 */
export type UserContentPart =
  | { type: "text"; text: string }
  | { type: "image"; source: Record<string, unknown>; image?: DecodedImage; detail?: "auto" | "low" | "high" }
  | { type: "video"; source: Record<string, unknown>; frames?: DecodedImage[] /** Each frame's time in the video, in seconds. */; frameTimes?: number[]; duration?: number };

export type ChatMessage =
  | { role: "system"; content: string }
  | {
      role: "user";
      /** The text parts, joined: what a model that does not see reads. */
      content: string;
      /** Set when the message has image or video parts. */
      parts?: UserContentPart[];
    }
  | {
      role: "assistant";
      content: string | null;
      reasoning?: string | null;
      toolCalls?: ToolCall[];
      /** Opaque reasoning records some providers return; kept with the message as received. */
      reasoningDetails?: unknown[];
      thoughtSignature?: string | null;
    }
  | { role: "tool"; content: string; toolCallId: string };

export interface SamplingOptions {
  temperature: number;
  topP?: number;
  topK?: number;
  minP?: number;
  seed?: number;
  repetitionPenalty?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** The standard's logit_bias: token id -> a value from -100 to 100 added to that token's logit before sampling. */
  logitBias?: ReadonlyMap<number, number>;
  /**
   * Entropy-scaled temperature (llama.cpp's "dynatemp"): each token is sampled at a
   * temperature between `min` and `max`, higher where the model is unsure.
   */
  dynamicTemperature?: { min: number; max: number };
}

export interface FunctionDefinition {
  name: string;
  description?: string;
  /** The parameters' JSON Schema as the caller wrote it: what the model is shown. */
  parametersSchema: Record<string, unknown>;
  /** The same, checked against the subset engines enforce: what the arguments are held to. */
  parameters: JsonSchemaSubset;
}

export type ToolChoice = "auto" | "none" | "required" | { name: string };

export interface ToolOptions {
  functions: FunctionDefinition[];
  choice: ToolChoice;
  /** Whether the model may make more than one call in a turn. */
  parallel: boolean;
}

export type ResponseFormat =
  | { type: "json_object" }
  | {
      type: "json_schema";
      schema: JsonSchemaSubset;
      /** The schema as the caller wrote it, with its name: what a relayed request forwards. */
      source?: { name?: string; strict?: boolean; schema: Record<string, unknown> };
    };

export interface ReasoningOptions {
  /**
   * auto: the model decides whether to think; on: a thought block is opened at the start
   * of the answer; off: thinking is switched off where the model's template allows it.
   */
  mode: "auto" | "on" | "off";
  /**
   * Share of the completion's token limit the thought block may take before it is closed
   * (mode "on"), so an answer always has room after it; 1 or absent: no early close.
   */
  budgetShare?: number;
  /** The effort the caller asked for (mode "on"), passed on as it is by engines that relay it. */
  effort?: "minimal" | "low" | "medium" | "high" | "xhigh" | "max";
}

export interface PromptCacheOptions {
  /** Requests with the same key go to the same sequence while it is free. */
  key?: string;
  /**
   * Index of the last message whose content carries a cache breakpoint: the prompt up to
   * the end of that message is kept in preference to other cached prefixes.
   */
  breakpointMessage?: number;
}

export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[];
}

export interface TokenLogprob extends TopLogprob {
  top: TopLogprob[];
}

/** What the engine reports while it generates, per choice. */
export type ChatDelta =
  | { kind: "content"; text: string; logprobs?: TokenLogprob[] }
  | { kind: "reasoning"; text: string }
  | { kind: "toolCallStart"; index: number; id: string; name: string }
  | { kind: "toolCallArguments"; index: number; text: string };

export type FinishReason = "stop" | "length" | "tool_calls" | "abort";

export interface ChatGenerateOptions {
  messages: ChatMessage[];
  /** Upper bound on generated tokens per choice (reasoning included); capped by the room left in the context. */
  maxTokens?: number;
  sampling: SamplingOptions;
  /** Generation ends before any of these strings; they are not part of the output. */
  stop?: string[];
  /** Generation ends when one of these tokens is sampled. */
  stopTokenIds?: number[];
  /** Independent completions of the same prompt, generated in parallel. */
  choices?: number;
  /** Report token log probabilities, with this many alternatives per position. */
  logprobs?: { top: number };
  tools?: ToolOptions;
  responseFormat?: ResponseFormat;
  reasoning?: ReasoningOptions;
  cache?: PromptCacheOptions;
}

/** The signal and callbacks of one run of a planned generation. */
export interface GenerationCall<D = ChatDelta> {
  signal?: AbortSignal;
  /**
   * Called once the request is accepted (sequences assigned) and generation begins: failures
   * before it are the model's capacity, and a stream should not have started yet.
   */
  onStart?: () => void;
  /** Called as soon as a piece of a choice is safe to emit. */
  onDelta?: (choice: number, delta: D) => void;
}

/**
 * A request the engine has rendered, measured and accepted, not yet run: what it can use at
 * most (the service reserves credits and tokens for that), and how to run it. Planning never
 * calls back into the caller; what the model cannot do is refused with a PlanRefusal.
 */
export interface PlannedGeneration<R, C> {
  /** Prompt tokens (all prompts'; a bound where the engine does not tokenize locally). */
  readonly promptTokens: number;
  /** Most completion tokens, every choice using its whole budget. */
  readonly maxTokens: number;
  /** Choices generated (of all prompts, for a completion). */
  readonly choices: number;
  generate(call: C): Promise<R>;
}

export type PlannedChat = PlannedGeneration<ChatGenerateResult, GenerationCall>;
export type PlannedCompletion = PlannedGeneration<CompleteResult, CompletionCall>;

export interface ChatChoiceResult {
  index: number;
  content: string;
  /** The thought block's text, or null when the model did not think. */
  reasoning: string | null;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  completionTokens: number;
  reasoningTokens: number;
  /** Per-token log probabilities of the content, when asked for. */
  logprobs: TokenLogprob[] | null;
}

export interface ChatGenerateResult {
  choices: ChatChoiceResult[];
  /** "abort" when the client went away; else the first choice's reason. */
  finishReason: FinishReason;
  promptTokens: number;
  /** Summed over the choices. */
  completionTokens: number;
  reasoningTokens: number;
  /** Prompt tokens whose KV state was reused from an earlier request. */
  cachedTokens: number;
  /** Prompt tokens evaluated and written into the KV cache by this request. */
  cacheWriteTokens: number;
  /** Milliseconds spent waiting for free sequences. */
  queueMs: number;
  /** Milliseconds from start of evaluation to the first generated token. */
  timeToFirstTokenMs: number | null;
}

/** One prompt of a raw-text completion: text, or token ids of the model's vocabulary. */
export type CompletionPrompt = string | number[];

/**
 * A raw-text completion (the legacy completions API): the prompt is given to the model as it
 * is, with no chat template. Shares sampling, stops, choices, log probabilities, streaming and
 * the credit hold with chat.
 */
export interface CompleteOptions extends Pick<ChatGenerateOptions, "maxTokens" | "sampling" | "stop" | "logprobs"> {
  /** Each prompt gets `choices` completions; choice `p * choices + j` is prompt p's j-th. */
  prompts: CompletionPrompt[];
  choices?: number;
  /**
   * Fill-in-the-middle: the text that follows the gap (each prompt is the text before it). The
   * model must have FIM tokens; the prompt is built from them instead of the raw text.
   */
  suffix?: string;
  /** Report each prompt's text (and with `logprobs`, its tokens' log probabilities) to echo it. */
  echo?: boolean;
  /**
   * With `echo` and `logprobs`: whether the prompt's tokens' log probabilities are reported too
   * (default true). False when only the choices' are needed (best_of ranks candidates by them):
   * reading a prompt's costs evaluating it afresh, past the prompt cache.
   */
  echoLogprobs?: boolean;
}

/** A completion's run: content deltas only, and each prompt's echo before its choices' deltas. */
export interface CompletionCall extends GenerationCall<Extract<ChatDelta, { kind: "content" }>> {
  onEcho?: (prompt: number, echoed: EchoedPrompt) => void;
}

/** A prompt as echoed: its text and, when log probabilities were asked for, its tokens' (the first has none: null). */
export interface EchoedPrompt {
  text: string;
  tokens: { token: string; logprob: number | null; top: TopLogprob[] }[] | null;
}

export interface CompleteResult extends ChatGenerateResult {
  /** With `echo`: each prompt's echo. */
  echoed?: EchoedPrompt[];
}

/**
 * What a model needs in memory once loaded: estimated before it loads (the memory budget is
 * checked against it), or reported by the loaded engine itself.
 */
export interface MemoryEstimate {
  ramBytes: number;
  vramBytes: number;
}

/** What every loaded engine has; each kind adds its own methods. */
export interface EngineBase {
  readonly kind: string;
  /** Which backend serves requests, for x-service-model-router. */
  readonly router: string;
  /** ONNX engines: where onnxruntime runs the model, and why (GET /admin/models shows it). */
  readonly executionProvider?: ExecutionProviderChoice;
  /** Relayed models: the upstream replicas and their state (GET /admin/models, the console, the metrics). */
  readonly replicaPool?: ReplicaPoolView;
  /**
   * What the loaded model holds, as its runtime reports it (the measure its backend's
   * `estimateMemory` predicts); absent where the runtime cannot say, and the estimate stands.
   */
  memoryInUse?(): MemoryEstimate;
  dispose(): Promise<void>;
}

/** What the rest of the node reads of an upstream pool. */
export interface ReplicaPoolView {
  status(): ReplicaStatus[];
  /** Each replica's answer latencies (seconds) since the last call. */
  takeLatencies(): { replica: string; seconds: number[] }[];
}

/**
 * What a loaded chat model can do; requests for anything else are refused by the service,
 * once, before planning (`n`, tools, structured output, log probabilities, stop token ids, FIM).
 */
export interface ChatFeatures {
  /**
   * Sampling fields (SamplingOptions' names) the engine accepts and ignores: the service names
   * the ones a request set in x-service-unsupported-parameters.
   */
  ignoredSampling?: readonly (keyof SamplingOptions)[];
  functionCalling: boolean;
  /** The template has a thought block (`<think>`...). */
  reasoning: boolean;
  /** Thinking can be switched off through the template (`enable_thinking`). */
  reasoningToggle: boolean;
  responseSchema: boolean;
  logprobs: boolean;
  dynamicTemperature: boolean;
  /** Most choices one request may ask for (`n`). */
  maxChoices: number;
  /** Token ids run from 0 to vocabularySize - 1. */
  vocabularySize: number;
  /** Fill-in-the-middle (`suffix` on completions): the model has prefix/suffix/middle tokens. */
  infill: boolean;
}

/** What a chat template writes around messages besides their content, at the least. */
export interface TemplateCosts {
  /** For a message that continues the turn before it (same role): it is merged into that turn. */
  perMessage: number;
  /** For an assistant turn and the user turn after it, each opened by a change of role. */
  perExchange: number;
}

/** Templates may treat empty messages apart (Qwen's drops them): both are measured. */
export interface TemplateTokens {
  empty: TemplateCosts;
  withContent: TemplateCosts;
}

export interface ChatEngine extends EngineBase {
  readonly kind: "chat";
  readonly contextSize: number;
  /**
   * The most characters a rendered prompt can have and still fit the context (the context
   * times the longest token piece); longer text is refused before tokenizing. Absent where
   * the engine does not tokenize locally or no sound bound holds.
   */
  readonly maxPromptChars?: number;
  /**
   * The fewest tokens the chat template writes around messages, besides their content, measured
   * at load: more messages than the context holds at this rate are refused before rendering.
   * Absent where the engine does not render locally.
   */
  readonly templateTokens?: TemplateTokens;
  /**
   * At least how many tokens these texts take (never more than the whole would), counted in
   * slices with the event loop free between them and stopping once past `stopAbove`: long
   * text is measured before the prompt is tokenized in one go. Absent: not tokenized locally.
   */
  countTokensAtLeast?(texts: readonly string[], stopAbove: number): Promise<number>;
  readonly features: ChatFeatures;
  /**
   * Renders and measures a chat request; throws a PlanRefusal for what the model cannot do.
   * Asynchronous where measuring needs work off the event loop (a vision model's image processor).
   */
  plan(options: ChatGenerateOptions): PlannedChat | Promise<PlannedChat>;
  /** The same for a raw-text completion (no chat template), for the legacy completions API. */
  planCompletion(options: CompleteOptions): PlannedCompletion | Promise<PlannedCompletion>;
  stats(): { sequences: number; busy: number; waiting: number; decode?: DecodeStats };
}

/** A llama.cpp context's decode calls since load (GET /admin/models). */
export interface DecodeStats {
  batches: number;
  tokens: number;
  /** Decode calls by how many sequences took part. */
  sequencesPerBatch: Record<string, number>;
  /** Generation steps every generating sequence took part in, and ones that went ahead without a late one. */
  fullSteps: number;
  deadlineSteps: number;
  deadlineMs: number;
  /** Whether a step's text goes to the clients while the next step decodes (llama.overlapOutput). */
  overlapOutput: boolean;
}

/** The voice a synthesis uses: one of the model's voices, or a cloned voice's style vector. */
export type SpeechVoice = { kind: "preset"; name: string } | { kind: "cloned"; id: string; style: Float32Array };

export interface SynthesizeOptions {
  /** One piece of text (a sentence, or part of a long one). */
  text: string;
  voice: SpeechVoice;
  /** 0.25 to 4. */
  speed: number;
  /** The request's language hint (model-specific; engines ignore what they do not know). */
  language?: string;
  /** Honored only by engines whose model advertises the matching capability. */
  prompt?: string;
  temperature?: number;
  topP?: number;
  signal?: AbortSignal;
}

/** Speech engines that produce samples; the service splits the text, encodes and streams. */
export interface PcmSpeechEngine extends EngineBase {
  readonly kind: "speech";
  readonly output: "pcm";
  readonly sampleRate: number;
  /** Whether `speed` is applied by the model; otherwise the service time-stretches the audio. */
  readonly nativeSpeed: boolean;
  /** Voices offered (file names for Kokoro). */
  voices(): readonly string[];
  /** Text to mono float32 PCM at `sampleRate`. */
  synthesize(options: SynthesizeOptions): Promise<Float32Array>;
  /** Present when the model can clone voices: a reference sample to the style vector `synthesize` takes. */
  readonly cloning?: VoiceEncoder;
}

export interface VoiceEncoder {
  /** Rate the reference sample must be decoded at. */
  readonly sampleRate: number;
  embed(samples: Float32Array, signal?: AbortSignal): Promise<Float32Array>;
}

/** Speech engines that return encoded audio themselves (an upstream server). */
export interface RelaySpeechEngine extends EngineBase {
  readonly kind: "speech";
  readonly output: "relay";
  voices(): readonly string[];
  speak(options: SynthesizeOptions & { format: string; streaming: boolean }): Promise<{ contentType: string; body: AsyncIterable<Uint8Array> }>;
}

export type SpeechEngine = PcmSpeechEngine | RelaySpeechEngine;

export type TimestampGranularity = "segment" | "word";

export interface TranscribeOptions {
  /**
   * Mono float32 PCM at the engine's sampleRate, or what makes it, called once the engine is
   * free to transcribe it: requests waiting their turn then hold their upload, not its samples
   * (a 2 MB FLAC of three hours is 690 MB of them). What it throws fails the transcription;
   * what it returns is the engine's (a worker engine moves it to its thread).
   */
  audio: Float32Array | (() => Promise<Float32Array>);
  /** ISO 639-1 code or language name; undefined lets the model detect it. */
  language?: string;
  /** transcribe: text in the spoken language; translate: English text (Whisper's translate task). */
  task?: "transcribe" | "translate";
  prompt?: string;
  temperature?: number;
  timestamps: readonly TimestampGranularity[];
  /** Called with each segment as soon as it is decoded, in order (what a stream sends). */
  onSegment?: (segment: TranscriptionSegment) => void;
  signal?: AbortSignal;
}

/** A stretch of decoded text with the decoder's own statistics (those of the 30 s window it came from). */
export interface TranscriptionSegment {
  start: number;
  end: number;
  text: string;
  /** Token ids, timestamp tokens included (as Whisper reports them). */
  tokens?: number[];
  /** Mean log probability of the window's tokens, end-of-text included. */
  avgLogprob?: number;
  /** Text bytes over zlib-compressed bytes (repetitive text scores high). */
  compressionRatio?: number;
  /** Probability of the no-speech token at the window's first decoding step; null when the model has none. */
  noSpeechProb?: number | null;
  temperature?: number;
  /** Where the window starts, in 10 ms mel frames. */
  seek?: number;
}

export interface TranscriptionResult {
  text: string;
  segments: TranscriptionSegment[];
  /** Present when word timestamps were asked for and the model supports them. */
  words?: { word: string; start: number; end: number }[];
  /** The spoken language (the hint, or what the model detected), when known. */
  language?: string;
  /** Text tokens generated. */
  outputTokens?: number;
}

export interface TranscriptionEngine extends EngineBase {
  readonly kind: "transcription";
  readonly sampleRate: number;
  readonly supportsWordTimestamps: boolean;
  /** Whether the translate task is available (multilingual Whisper models). */
  readonly supportsTranslation: boolean;
  transcribe(options: TranscribeOptions): Promise<TranscriptionResult>;
}

export interface ImageGenerateOptions {
  prompt: string;
  /** Used when classifier-free guidance runs (cfgScale > 1). */
  negativePrompt: string;
  width: number;
  height: number;
  steps: number;
  cfgScale: number;
  /** Variant i uses seed + i; the same seed and settings give the same image. */
  seed: number;
  variants: number;
  /** Run the safety classifier, when the model has one. */
  safetyCheck: boolean;
  /**
   * Image-to-image (edits): start from this picture, `width` x `height` interleaved RGB; `strength`
   * 0 to 1 is how much of the schedule runs; `mask` (a byte per pixel, 255 = repaint) keeps the rest.
   */
  init?: { rgb: Uint8Array; strength: number; mask?: Uint8Array };
  signal?: AbortSignal;
}

export interface GeneratedImage {
  /** Interleaved 8-bit RGB, width x height x 3. */
  rgb: Uint8Array;
  width: number;
  height: number;
  seed: number;
  /** The safety classifier's verdict; null when it did not run. */
  flagged: boolean | null;
}

export interface ImageGenerateResult {
  images: GeneratedImage[];
  /** Milliseconds waiting for a free worker. */
  queueMs: number;
  /** Milliseconds of tokenisation and text encoding. */
  preprocessMs: number;
  /** Milliseconds of denoising, decoding and the safety check. */
  inferenceMs: number;
}

export interface ImageEngine extends EngineBase {
  readonly kind: "image";
  /** Whether a safety classifier is loaded (safe mode is unavailable without one). */
  readonly safetyChecker: boolean;
  /** Whether the model can start from a picture (its export has a VAE encoder): edits. */
  readonly imageToImage: boolean;
  generate(options: ImageGenerateOptions): Promise<ImageGenerateResult>;
  stats(): { workers: number; busy: number; waiting: number };
}

export interface VideoGenerateOptions {
  prompt: string;
  negativePrompt: string;
  width: number;
  height: number;
  steps: number;
  cfgScale: number;
  seed: number;
  frames: number;
  keyframeInterval: number;
  /** Image-to-video: the first frame is this picture (width x height RGB) taken `strength` of the way toward the prompt. */
  init?: { rgb: Uint8Array; strength: number };
  signal?: AbortSignal;
  /** Each frame as soon as it is ready (interleaved RGB), in order. */
  onFrame: (rgb: Uint8Array, index: number) => void | Promise<void>;
  onProgress?: (fraction: number) => void;
}

export interface VideoEngine extends EngineBase {
  readonly kind: "video";
  generateFrames(options: VideoGenerateOptions): Promise<void>;
  stats(): { workers: number; busy: number; waiting: number };
}

export interface EmbedResult {
  /** One unit-length (when the model normalises) vector per input, at the model's native size. */
  vectors: Float32Array[];
  /** Tokens per input, special tokens included. */
  tokens: number[];
}

export interface EmbeddingEngine extends EngineBase {
  readonly kind: "embedding";
  /** Native vector size. */
  readonly dimensions: number;
  /** Tokens one input may have. */
  readonly maxInputTokens: number;
  /**
   * The most characters an input can have and still fit maxInputTokens (checked before
   * tokenizing); absent where no sound bound holds (the count then stops early instead).
   */
  readonly maxInputChars?: number;
  /**
   * Token counts per input, without running the model (for limits and the credit hold). Past
   * `stopAbove` an engine may stop counting and report any number above it.
   */
  countTokens(texts: readonly string[], options?: { stopAbove?: number }): Promise<number[]>;
  /** Embeds all inputs; batches of inputs run through the model together. */
  embed(texts: readonly string[], options?: { signal?: AbortSignal }): Promise<EmbedResult>;
  /**
   * countTokens gives upper bounds, not counts (a relay without the upstream's tokenizer): the
   * hold is taken on them and the charge on the tokens `embed` reports.
   */
  readonly countsAreBounds?: boolean;
}

export interface UpscaleOptions {
  /** Interleaved RGB, `width` x `height`. */
  rgb: Uint8Array;
  width: number;
  height: number;
  /** How many times the model runs over the picture: each pass multiplies both sides by `modelScale`. */
  passes: number;
  signal?: AbortSignal;
  /** Fraction of the tiles done, across passes. */
  onProgress?: (fraction: number) => void;
}

/** Super-resolution: the picture `modelScale` times larger per pass, in tiles so a large picture never needs the model's memory for the whole of it. */
export interface UpscaleEngine extends EngineBase {
  readonly kind: "upscale";
  readonly modelScale: number;
  upscale(options: UpscaleOptions): Promise<{ rgb: Uint8Array; width: number; height: number }>;
}

/** Background removal: the picture with an alpha channel from the model's matte (transparent where the background was). */
export interface BackgroundRemovalEngine extends EngineBase {
  readonly kind: "background";
  removeBackground(options: { rgb: Uint8Array; width: number; height: number; signal?: AbortSignal }): Promise<{ rgba: Uint8Array; width: number; height: number }>;
}

export interface MusicOptions {
  /** What the music should be like (the text encoder's input). */
  prompt: string;
  /** Length of the clip: the engine returns exactly this many seconds of samples. */
  durationSeconds: number;
  signal?: AbortSignal;
  /** Fraction of the clip's frames generated. */
  onProgress?: (fraction: number) => void;
}

/** Text-to-music: mono samples in [-1, 1] at `sampleRate`, generated frame by frame (`frameRate` a second). */
export interface MusicEngine extends EngineBase {
  readonly kind: "music";
  readonly sampleRate: number;
  readonly frameRate: number;
  generate(options: MusicOptions): Promise<Float32Array>;
}

/**
 * Engine kinds by name. A new kind (speech, transcription) is one entry here plus its
 * interface; ModelManager.engine(id, kind) then returns it typed.
 */
export interface EnginesByKind {
  chat: ChatEngine;
  speech: SpeechEngine;
  transcription: TranscriptionEngine;
  image: ImageEngine;
  video: VideoEngine;
  embedding: EmbeddingEngine;
  upscale: UpscaleEngine;
  background: BackgroundRemovalEngine;
  music: MusicEngine;
}
export type EngineKind = keyof EnginesByKind;
export type Engine = EnginesByKind[EngineKind];
