import { fetchFailureCause } from "../../http/fetchFailureCause.js";
import type { UpstreamSettings } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { ApiError, InvalidRequestError, ModelAtCapacityError, PayloadTooLargeError, UpstreamError } from "../../errors.js";
import { PlanRefusalError } from "../PlanRefusal.js";
import { upstreamToolCallId } from "./upstreamToolCallId.js";
import type {
  ChatChoiceResult,
  ChatDelta,
  ChatEngine,
  ChatFeatures,
  ChatGenerateOptions,
  ChatGenerateResult,
  CompleteOptions,
  CompleteResult,
  FinishReason,
  GenerationCall,
  PlannedChat,
  PlannedCompletion,
  TokenLogprob,
  ToolCall,
} from "../types.js";
import { readSseEvents } from "./readSseEvents.js";
import { completionPromptBound, completionPromptEstimate, toUpstreamCompletionRequest } from "./toUpstreamCompletionRequest.js";
import { promptTokenBound, promptTokenEstimate, toUpstreamRequest } from "./toUpstreamRequest.js";

/** Used when neither the configuration nor the upstream's model list gives the context window. */
export const UPSTREAM_DEFAULT_CONTEXT_SIZE = 8192;

type ResolvedSettings = UpstreamSettings & { baseUrl: string };

/**
 * Chat relayed to another server of the chat-completions standard (vLLM, llama-server, another
 * Hearth, a hosted provider): POST {baseUrl}/chat/completions, always streamed. Hearth keeps
 * keys, limits and credits; the upstream generates and reports the usage that is billed.
 */
export class UpstreamChatEngine implements ChatEngine {
  readonly kind = "chat" as const;
  readonly router: string;
  readonly features: ChatFeatures;
  private readonly host: string;
  /** In-flight upstream requests, aborted on dispose. */
  private readonly inFlight = new Set<AbortController>();

  private constructor(
    private readonly settings: ResolvedSettings,
    private readonly upstreamModel: string,
    private readonly modelId: string,
    readonly contextSize: number,
  ) {
    this.host = new URL(settings.baseUrl).host;
    this.router = `upstream ${this.host}`;
    // infill: a suffix is relayed, and an upstream model without FIM tokens answers the 400 itself.
    this.features = { ...upstreamChatFeatures(settings), dynamicTemperature: settings.features?.dynamicTemperature ?? false, vocabularySize: 0, infill: true };
  }

  static async load(entry: ModelEntry): Promise<UpstreamChatEngine> {
    const settings = entry.upstream;
    if (!settings?.baseUrl) throw new Error("no upstream base URL is configured (upstream.baseUrl or the variable named by upstream.baseUrlEnv)");
    const resolved = { ...settings, baseUrl: settings.baseUrl.replace(/\/+$/, "") };
    const model = settings.model ?? entry.id;
    const contextSize = settings.contextSize ?? (await fetchContextSize(resolved, model)) ?? UPSTREAM_DEFAULT_CONTEXT_SIZE;
    return new UpstreamChatEngine(resolved, model, entry.id, contextSize);
  }

  stats() {
    // No fixed pool here: the upstream schedules; what is in flight is what this node sent.
    return { sequences: this.inFlight.size, busy: this.inFlight.size, waiting: 0 };
  }

  /**
   * The request as the upstream's chat body. The upstream's tokenizer is not here: the plan
   * bounds the prompt, and counts the whole context per choice when max_tokens is absent; the
   * upstream's usage settles it.
   */
  plan(options: ChatGenerateOptions): PlannedChat {
    const count = options.choices ?? 1;
    const body = toUpstreamRequest(options, this.upstreamModel, this.features);
    const maxTokens = Math.min(options.maxTokens ?? this.contextSize, this.contextSize);
    return {
      promptTokens: promptTokenBound(body),
      maxTokens: maxTokens * count,
      choices: count,
      generate: (call) => this.relay("/chat/completions", body, count, promptTokenEstimate(body), call, (chunk) => chunk),
    };
  }

  /** Raw-text completion relayed to the upstream's legacy POST /completions (same streaming, usage and errors as chat). */
  planCompletion(options: CompleteOptions): PlannedCompletion {
    const count = (options.choices ?? 1) * options.prompts.length;
    if (options.echo && (options.logprobs || options.prompts.some((p) => typeof p !== "string"))) {
      throw new PlanRefusalError({ kind: "echoUnavailable" }, this.modelId);
    }
    const body = toUpstreamCompletionRequest(options, this.upstreamModel);
    const maxTokens = Math.min(options.maxTokens ?? this.contextSize, this.contextSize);
    return {
      promptTokens: completionPromptBound(options),
      maxTokens: maxTokens * count,
      choices: count,
      generate: async (call) => {
        const echoed = options.echo ? options.prompts.map((prompt) => ({ text: prompt as string, tokens: null })) : undefined;
        const onDelta = call.onDelta as GenerationCall["onDelta"];
        const onStart = () => {
          for (const [p, echo] of echoed?.entries() ?? []) call.onEcho?.(p, echo);
          call.onStart?.();
        };
        const result: CompleteResult = await this.relay(
          "/completions",
          body,
          count,
          completionPromptEstimate(options),
          { signal: call.signal, onStart, onDelta },
          fromCompletionChunk,
        );
        if (echoed) result.echoed = echoed;
        return result;
      },
    };
  }

  /** POSTs `body` to the upstream, streamed, and folds the answer (chunks mapped to the chat shape) into the engine result. */
  private async relay(
    path: string,
    body: Record<string, unknown>,
    count: number,
    promptEstimate: number,
    options: GenerationCall,
    toChatChunk: (chunk: WireChunk) => WireChunk,
  ): Promise<ChatGenerateResult> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    // One timer for the wait for the answer and then for every silence between chunks.
    const armTimer = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort(new Error("upstream timed out"));
      }, this.settings.timeoutMs);
    };
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    const failure = (error: unknown, phase: string): Error => {
      if (timedOut) return new UpstreamError(`The upstream chat server at ${this.host} did not answer within ${this.settings.timeoutMs} ms ${phase}`, 504);
      if (error instanceof ApiError) return error;
      // Not reachable at all: 503, as for a local model that cannot serve; broken off mid-answer: 502.
      if (phase === "") return new UpstreamError(`The upstream chat server at ${this.host} could not be reached: ${fetchFailureCause(error)}`, 503);
      return new UpstreamError(`The upstream chat server at ${this.host} failed ${phase}: ${fetchFailureCause(error)}`, 502);
    };

    const sentAt = performance.now();
    try {
      armTimer();
      let response: Response;
      try {
        response = await fetch(`${this.settings.baseUrl}${path}`, { method: "POST", headers: this.headers(), body: JSON.stringify(body), signal });
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason ?? error;
        throw failure(error, "");
      }
      if (!response.ok) throw await upstreamFailure(response, this.host, this.modelId);
      if (!response.body) throw new UpstreamError(`The upstream chat server at ${this.host} sent an empty answer`);
      options.onStart?.();

      const stream = new UpstreamStream(count, options.onDelta);
      try {
        for await (const data of readSseEvents(response.body, armTimer)) {
          if (data.trim() === "[DONE]") {
            stream.done = true;
            break;
          }
          stream.accept(toChatChunk(parseChunk(data, this.host)));
        }
      } catch (error) {
        if (options.signal?.aborted && !timedOut) return stream.result("abort", promptEstimate, sentAt);
        throw failure(error, "mid-stream");
      }
      if (!stream.done && !stream.finished()) throw new UpstreamError(`The upstream chat server at ${this.host} ended the stream before the answer was complete`, 502);
      return stream.result(null, promptEstimate, sentAt);
    } finally {
      clearTimeout(timer);
      // Stops the upstream's generation when the caller left, timed out or the stream ended early.
      controller.abort();
      this.inFlight.delete(controller);
    }
  }

  private headers(): Record<string, string> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
    if (this.settings.apiKey) headers.authorization = `Bearer ${this.settings.apiKey}`;
    return headers;
  }

  async dispose(): Promise<void> {
    for (const controller of this.inFlight) controller.abort(new Error("the model is shutting down"));
  }
}

/** The chat features an upstream model is configured with (defaults: tools, structured output, logprobs). */
export function upstreamChatFeatures(settings: UpstreamSettings | undefined) {
  const f = settings?.features;
  return {
    functionCalling: f?.functionCalling ?? true,
    responseSchema: f?.responseSchema ?? true,
    logprobs: f?.logprobs ?? true,
    reasoning: f?.reasoning ?? false,
    reasoningToggle: f?.reasoningToggle ?? false,
    maxChoices: f?.maxChoices ?? 8,
  };
}

interface WireToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}
interface WireLogprob {
  token: string;
  logprob: number;
  bytes?: number[] | null;
  top_logprobs?: { token: string; logprob: number; bytes?: number[] | null }[];
}
interface WireChunk {
  choices?: {
    index?: number;
    /** The legacy completions chunk's text (mapped to delta.content). */
    text?: string | null;
    delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: WireToolCallDelta[] | null };
    logprobs?: { content?: WireLogprob[] | null; tokens?: string[]; token_logprobs?: (number | null)[]; top_logprobs?: (Record<string, number> | null)[] | null } | null;
    finish_reason?: string | null;
  }[];
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number; cache_creation_input_tokens?: number } | null;
    completion_tokens_details?: { reasoning_tokens?: number } | null;
  } | null;
  error?: unknown;
}

function parseChunk(data: string, host: string): WireChunk {
  let chunk: WireChunk;
  try {
    chunk = JSON.parse(data) as WireChunk;
  } catch {
    throw new UpstreamError(`The upstream chat server at ${host} sent a stream event that is not JSON`);
  }
  // An error after the stream started arrives as an event of its own.
  if (chunk.error !== undefined) throw new UpstreamError(`The upstream chat server at ${host} failed mid-stream: ${errorMessage(chunk.error) ?? "unknown error"}`);
  return chunk;
}

interface ChoiceState {
  content: string;
  reasoning: string;
  calls: Map<number, ToolCall & { started: boolean }>;
  logprobs: TokenLogprob[];
  finishReason: FinishReason | null;
  /** Stream events carrying output: about one token each on the servers this relays to. */
  pieces: number;
}

/** Folds the upstream's chunks into per-choice deltas (passed on at once) and the final result. */
class UpstreamStream {
  done = false;
  private readonly choices: ChoiceState[];
  private usage: WireChunk["usage"] = null;
  private firstTokenAt: number | null = null;

  constructor(
    count: number,
    private readonly onDelta: ((choice: number, delta: ChatDelta) => void) | undefined,
  ) {
    this.choices = Array.from({ length: count }, () => ({ content: "", reasoning: "", calls: new Map(), logprobs: [], finishReason: null, pieces: 0 }));
  }

  accept(chunk: WireChunk): void {
    if (chunk.usage) this.usage = chunk.usage;
    for (const wire of chunk.choices ?? []) {
      const index = wire.index ?? 0;
      const state = this.choices[index];
      if (!state) continue;
      const delta = wire.delta ?? {};
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (reasoning) {
        state.reasoning += reasoning;
        this.emit(index, state, { kind: "reasoning", text: reasoning });
      }
      const logprobs = wire.logprobs?.content?.map(toTokenLogprob);
      if (logprobs?.length) state.logprobs.push(...logprobs);
      if (delta.content || logprobs?.length) {
        state.content += delta.content ?? "";
        this.emit(index, state, { kind: "content", text: delta.content ?? "", ...(logprobs?.length ? { logprobs } : {}) });
      }
      for (const call of delta.tool_calls ?? []) this.acceptCall(index, state, call);
      if (wire.finish_reason) state.finishReason = toFinishReason(wire.finish_reason);
    }
  }

  private acceptCall(choice: number, state: ChoiceState, wire: WireToolCallDelta): void {
    const index = wire.index ?? 0;
    let call = state.calls.get(index);
    if (!call) {
      call = { id: wire.id || upstreamToolCallId(), name: "", arguments: "", started: false };
      state.calls.set(index, call);
    }
    if (wire.function?.name) call.name += wire.function.name;
    const args = wire.function?.arguments ?? "";
    if (!call.started && call.name) {
      call.started = true;
      this.emit(choice, state, { kind: "toolCallStart", index, id: call.id, name: call.name });
      // Arguments that came before the name are passed on now.
      if (call.arguments) this.emit(choice, state, { kind: "toolCallArguments", index, text: call.arguments });
    }
    if (args) {
      call.arguments += args;
      if (call.started) this.emit(choice, state, { kind: "toolCallArguments", index, text: args });
    }
  }

  private emit(index: number, state: ChoiceState, delta: ChatDelta): void {
    this.firstTokenAt ??= performance.now();
    state.pieces++;
    this.onDelta?.(index, delta);
  }

  finished(): boolean {
    return this.choices.every((c) => c.finishReason !== null);
  }

  result(abort: "abort" | null, promptEstimate: number, sentAt: number): ChatGenerateResult {
    const usage = this.usage;
    const counted = this.choices.map((c) => c.pieces);
    const totalCounted = counted.reduce((a, b) => a + b, 0);
    const completionTokens = usage?.completion_tokens ?? totalCounted;
    const choices: ChatChoiceResult[] = this.choices.map((c, index) => ({
      index,
      content: c.content,
      reasoning: c.reasoning || null,
      toolCalls: [...c.calls.entries()].sort(([a], [b]) => a - b).map(([, { id, name, arguments: args }]) => ({ id, name, arguments: args })),
      finishReason: abort ?? c.finishReason ?? "stop",
      // The upstream reports one total; with several choices it is shared by what each streamed.
      completionTokens: this.choices.length === 1 ? completionTokens : counted[index]!,
      reasoningTokens: 0,
      logprobs: c.logprobs.length > 0 ? c.logprobs : null,
    }));
    const promptTokens = usage?.prompt_tokens ?? promptEstimate;
    const cachedTokens = usage?.prompt_tokens_details?.cached_tokens ?? 0;
    return {
      choices,
      finishReason: abort ?? choices[0]!.finishReason,
      promptTokens,
      completionTokens,
      reasoningTokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0,
      cachedTokens,
      cacheWriteTokens: usage?.prompt_tokens_details?.cache_creation_input_tokens ?? Math.max(0, promptTokens - cachedTokens),
      queueMs: 0,
      timeToFirstTokenMs: this.firstTokenAt === null ? null : this.firstTokenAt - sentAt,
    };
  }
}

/** A legacy completions chunk (`text`, logprobs as parallel arrays) in the chat chunk's shape. */
function fromCompletionChunk(chunk: WireChunk): WireChunk {
  return {
    ...chunk,
    choices: chunk.choices?.map((choice) => {
      const legacy = choice.logprobs;
      const content = legacy?.tokens?.map((token, i) => ({
        token,
        logprob: legacy.token_logprobs?.[i] ?? -9999,
        top_logprobs: Object.entries(legacy.top_logprobs?.[i] ?? {}).map(([alternative, logprob]) => ({ token: alternative, logprob })),
      }));
      return { index: choice.index, delta: { content: choice.text ?? "" }, logprobs: content ? { content } : null, finish_reason: choice.finish_reason };
    }),
  };
}

function toTokenLogprob(wire: WireLogprob): TokenLogprob {
  const bytesOf = (token: string, bytes?: number[] | null) => bytes ?? [...Buffer.from(token, "utf8")];
  return {
    token: wire.token,
    logprob: wire.logprob,
    bytes: bytesOf(wire.token, wire.bytes),
    top: (wire.top_logprobs ?? []).map((t) => ({ token: t.token, logprob: t.logprob, bytes: bytesOf(t.token, t.bytes) })),
  };
}

function toFinishReason(wire: string): FinishReason {
  if (wire === "length") return "length";
  if (wire === "tool_calls" || wire === "function_call") return "tool_calls";
  return "stop";
}

/** The context window the upstream lists for the model (Hearth: context_length, vLLM: max_model_len), if it says. */
async function fetchContextSize(settings: ResolvedSettings, model: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${settings.baseUrl}/models`, {
      headers: settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {},
      signal: AbortSignal.timeout(Math.min(10_000, settings.timeoutMs)),
    });
    if (!response.ok) return undefined;
    const list = (await response.json()) as { data?: { id?: string; context_length?: unknown; max_model_len?: unknown }[] };
    const record = list.data?.find((m) => m.id === model);
    const size = Number(record?.context_length ?? record?.max_model_len);
    return Number.isInteger(size) && size > 0 ? size : undefined;
  } catch {
    return undefined;
  }
}

/** The message of an error body in any of the usual shapes: Hearth's {error}, the standard's {error: {message}}, FastAPI's {detail}. */
function errorMessage(body: unknown): string | undefined {
  if (typeof body === "string") return body;
  if (typeof body !== "object" || body === null) return undefined;
  const record = body as { error?: unknown; message?: unknown; detail?: unknown };
  if (typeof record.message === "string") return record.message;
  if (record.error !== undefined) return errorMessage(record.error);
  if (typeof record.detail === "string") return record.detail;
  return undefined;
}

/**
 * The caller's mistakes the upstream found (4xx) keep their status and message in Hearth's
 * error shape; the upstream refusing this node (401/402/403) or failing (5xx) is a 502, and an
 * upstream at capacity (429/503) a 503.
 */
async function upstreamFailure(response: Response, host: string, modelId: string): Promise<ApiError> {
  const text = await response.text().catch(() => "");
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the text itself.
  }
  const message = errorMessage(body) || response.statusText || `HTTP ${response.status}`;
  const status = response.status;
  if (status === 401 || status === 402 || status === 403) return new UpstreamError(`The upstream chat server at ${host} refused this node (${status}: ${message})`);
  if (status === 429 || status === 503) return new ModelAtCapacityError(modelId);
  if (status >= 500 || status < 400) return new UpstreamError(`The upstream chat server at ${host} failed (${status}: ${message})`);
  const record = typeof body === "object" && body !== null ? (body as { details?: unknown; param?: unknown; error?: { param?: unknown } }) : {};
  if (status === 400 || status === 422) {
    // The standard's {error: {param}}; vLLM puts param beside message.
    const param = typeof record.error === "object" && record.error !== null ? record.error.param : record.param;
    const details = record.details ?? (typeof param === "string" && param ? InvalidRequestError.forField(param.split("."), message).extra.details : undefined);
    return new InvalidRequestError(`Upstream: ${message}`, details);
  }
  if (status === 413) return new PayloadTooLargeError(`Upstream: ${message}`);
  return new ApiError(status, `Upstream: ${message}`);
}
