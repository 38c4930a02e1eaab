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

/**
 * Engine kinds by name. A new kind (embedding, speech, transcription, image) is one entry
 * here plus its interface; ModelManager.engine(id, kind) then returns it typed.
 */
export interface EnginesByKind {
  chat: ChatEngine;
}
export type EngineKind = keyof EnginesByKind;
export type Engine = EnginesByKind[EngineKind];
