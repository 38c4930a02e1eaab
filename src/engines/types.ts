import type { JsonSchemaSubset } from "./jsonSchemaSubset.js";

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

export type ResponseFormat = { type: "json_object" } | { type: "json_schema"; schema: JsonSchemaSubset };

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
  signal?: AbortSignal;
  /**
   * Called once the request is accepted (prompt rendered and within the context, sequences
   * assigned) and generation begins: failures before it are the request's fault or the
   * model's capacity, and a stream should not have started yet.
   */
  onStart?: () => void;
  /** Called as soon as a piece of a choice is safe to emit. */
  onDelta?: (choice: number, delta: ChatDelta) => void;
}

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

/** What a loaded chat model can do; requests for anything else are refused by the service. */
export interface ChatFeatures {
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
}

export interface ChatEngine {
  readonly kind: "chat";
  readonly contextSize: number;
  /** Which backend served the request, for x-service-model-router. */
  readonly router: string;
  readonly features: ChatFeatures;
  generate(options: ChatGenerateOptions): Promise<ChatGenerateResult>;
  stats(): { sequences: number; busy: number; waiting: number };
  dispose(): Promise<void>;
}
