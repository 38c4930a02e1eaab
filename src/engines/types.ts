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

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; reasoning?: string | null; toolCalls?: ToolCall[] }
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
}

export type FinishReason = "stop" | "length" | "abort";

export interface ChatGenerateOptions {
  messages: ChatMessage[];
  /** Upper bound on generated tokens; capped by the room left in the context. */
  maxTokens?: number;
  sampling: SamplingOptions;
  /** Generation ends before any of these strings; they are not part of the output. */
  stop?: string[];
  signal?: AbortSignal;
  /**
   * Called once the prompt is rendered and measured, before a sequence is taken: the place to
   * reserve credits. Throwing here rejects the request before any inference runs.
   */
  onPromptReady?: (plan: { promptTokens: number; maxTokens: number }) => void;
  /** Called with each new piece of visible text as soon as it is safe to emit. */
  onText?: (delta: string) => void;
}

export interface ChatGenerateResult {
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens whose KV state was reused from an earlier request. */
  cachedTokens: number;
  /** Milliseconds spent waiting for a free sequence. */
  queueMs: number;
  /** Milliseconds from start of evaluation to the first generated token. */
  timeToFirstTokenMs: number | null;
}

/** What every loaded engine has; each kind adds its own methods. */
export interface EngineBase {
  readonly kind: string;
  /** Which backend serves requests, for x-service-model-router. */
  readonly router: string;
  dispose(): Promise<void>;
}

export interface ChatEngine extends EngineBase {
  readonly kind: "chat";
  readonly contextSize: number;
  generate(options: ChatGenerateOptions): Promise<ChatGenerateResult>;
  stats(): { sequences: number; busy: number; waiting: number };
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
  /** Token counts per input, without running the model (for limits and the credit hold). */
  countTokens(texts: readonly string[]): Promise<number[]>;
  /** Embeds all inputs; batches of inputs run through the model together. */
  embed(texts: readonly string[], options?: { signal?: AbortSignal }): Promise<EmbedResult>;
}

/**
 * Engine kinds by name. A new kind (speech, transcription) is one entry here plus its
 * interface; ModelManager.engine(id, kind) then returns it typed.
 */
export interface EnginesByKind {
  chat: ChatEngine;
  image: ImageEngine;
  video: VideoEngine;
  embedding: EmbeddingEngine;
}
export type EngineKind = keyof EnginesByKind;
export type Engine = EnginesByKind[EngineKind];
