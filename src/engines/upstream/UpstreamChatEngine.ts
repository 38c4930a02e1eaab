import type { UpstreamSettings } from "../../config/backendSettings.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { upstreamReplicas } from "../../config/upstreamReplicas.js";
import { ApiError, UpstreamError } from "../../errors.js";
import { fetchFailureCause } from "../../http/fetchFailureCause.js";
import { GenerationCutShortError } from "../GenerationCutShortError.js";
import { PlanRefusalError } from "../PlanRefusal.js";
import type {
  ChatEngine,
  ChatFeatures,
  ChatGenerateOptions,
  ChatGenerateResult,
  CompleteOptions,
  CompleteResult,
  GenerationCall,
  PlannedChat,
  PlannedCompletion,
} from "../types.js";
import { chatAffinityKey, completionAffinityKey } from "./affinityKey.js";
import { checkReplicaHealth } from "./checkReplicaHealth.js";
import { readSseEvents } from "./readSseEvents.js";
import { type Replica, ReplicaPool, type ReplicaOutcome } from "./ReplicaPool.js";
import { completionPromptBound, completionPromptEstimate, toUpstreamCompletionRequest } from "./toUpstreamCompletionRequest.js";
import { promptTokenBound, promptTokenEstimate, toUpstreamRequest } from "./toUpstreamRequest.js";
import { fromCompletionChunk, parseChunk, UpstreamStream, type WireChunk } from "./UpstreamStream.js";
import { upstreamFailure } from "./upstreamFailure.js";

/** Used when neither the configuration nor the upstream's model list gives the context window. */
export const UPSTREAM_DEFAULT_CONTEXT_SIZE = 8192;

/** How one replica's attempt failed before anything reached the caller: another replica may take the request. */
class FailedBeforeFirstByte extends Error {
  constructor(readonly failure: Error) {
    super(failure.message);
  }
}

/** One relayed request: where it goes, what it sends, how its chunks read. */
interface RelayRequest {
  path: string;
  body: Record<string, unknown>;
  count: number;
  promptEstimate: number;
  affinityKey: string | undefined;
  toChatChunk: (chunk: WireChunk) => WireChunk;
}

/**
 * Chat relayed to another server of the chat-completions standard (vLLM, llama-server, another
 * Hearth, a hosted provider), or to a pool of them (ReplicaPool: cache-affine routing, health
 * checks, ejection): POST {baseUrl}/chat/completions, always streamed. Hearth keeps keys, limits
 * and credits; the upstream generates and reports the usage that is billed. A request that
 * failed before anything reached the caller is tried once more on another replica; a stream
 * that started is never retried (it ends with the error, and what was streamed is reported).
 */
export class UpstreamChatEngine implements ChatEngine {
  readonly kind = "chat" as const;
  readonly router: string;
  readonly features: ChatFeatures;
  /** In-flight upstream requests, aborted on dispose. */
  private readonly inFlight = new Set<AbortController>();

  private constructor(
    private readonly settings: UpstreamSettings,
    readonly replicaPool: ReplicaPool,
    private readonly upstreamModel: string,
    private readonly modelId: string,
    readonly contextSize: number,
  ) {
    const replicas = replicaPool.replicas;
    this.router = replicas.length === 1 ? `upstream ${replicas[0]!.host}` : `upstream pool of ${replicas.length}`;
    // infill: a suffix is relayed, and an upstream model without FIM tokens answers the 400 itself.
    this.features = { ...upstreamChatFeatures(settings), dynamicTemperature: settings.features?.dynamicTemperature ?? false, vocabularySize: 0, infill: true };
  }

  static async load(entry: ModelEntry): Promise<UpstreamChatEngine> {
    const settings = entry.upstream;
    const { replicas, unresolved } = settings ? upstreamReplicas(settings) : { replicas: [], unresolved: ["no upstream settings"] };
    if (!settings || unresolved.length > 0 || replicas.length === 0)
      throw new Error(`no upstream base URL is configured (upstream.baseUrl, upstream.baseUrlEnv or upstream.replicas): ${unresolved.join("; ")}`);
    const pool = new ReplicaPool(replicas, { modelId: entry.id, healthCheck: settings.healthCheck, check: checkReplicaHealth });
    const model = settings.model ?? entry.id;
    const contextSize = settings.contextSize ?? (await fetchContextSize(pool.replicas, model, settings.timeoutMs)) ?? UPSTREAM_DEFAULT_CONTEXT_SIZE;
    return new UpstreamChatEngine(settings, pool.startHealthChecks(), model, entry.id, contextSize);
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
    const request: RelayRequest = {
      path: "/chat/completions",
      body,
      count,
      promptEstimate: promptTokenEstimate(body),
      affinityKey: chatAffinityKey(options),
      toChatChunk: (chunk) => chunk,
    };
    return { promptTokens: promptTokenBound(body), maxTokens: maxTokens * count, choices: count, generate: (call) => this.relay(request, call) };
  }

  /** Raw-text completion relayed to the upstream's legacy POST /completions (same streaming, usage and errors as chat). */
  planCompletion(options: CompleteOptions): PlannedCompletion {
    const count = (options.choices ?? 1) * options.prompts.length;
    if (options.echo && ((options.logprobs && options.echoLogprobs !== false) || options.prompts.some((p) => typeof p !== "string"))) {
      throw new PlanRefusalError({ kind: "echoUnavailable" }, this.modelId);
    }
    const body = toUpstreamCompletionRequest(options, this.upstreamModel);
    const maxTokens = Math.min(options.maxTokens ?? this.contextSize, this.contextSize);
    const request: RelayRequest = {
      path: "/completions",
      body,
      count,
      promptEstimate: completionPromptEstimate(options),
      affinityKey: completionAffinityKey(options),
      toChatChunk: fromCompletionChunk,
    };
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
        const result: CompleteResult = await this.relay(request, { signal: call.signal, onStart, onDelta });
        if (echoed) result.echoed = echoed;
        return result;
      },
    };
  }

  /**
   * Sends the request to the replica the pool chooses; when that replica fails before anything
   * reached the caller (refused, timed out, a 5xx, a stream that broke before its first event),
   * once more to another. The caller planned and reserved once and gets one result: the retry
   * is invisible to billing.
   */
  private async relay(request: RelayRequest, options: GenerationCall): Promise<ChatGenerateResult> {
    const tried = new Set<Replica>();
    let replica = this.replicaPool.choose(request.affinityKey);
    for (;;) {
      tried.add(replica);
      try {
        return await this.relayTo(replica, request, options);
      } catch (error) {
        if (!(error instanceof FailedBeforeFirstByte)) throw error;
        const next = tried.size < 2 && !options.signal?.aborted ? this.replicaPool.pick(request.affinityKey, tried) : undefined;
        if (!next) throw error.failure;
        replica = next;
      }
    }
  }

  /** One attempt on one replica: POSTs the body, streamed, and folds the answer (chunks mapped to the chat shape) into the engine result. */
  private async relayTo(replica: Replica, request: RelayRequest, options: GenerationCall): Promise<ChatGenerateResult> {
    const { host } = replica;
    const timeoutMs = this.settings.timeoutMs;
    const call = this.replicaPool.begin(replica);
    let outcome: ReplicaOutcome = { ok: true };
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
      }, timeoutMs);
    };
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    // The caller hears of the request once the replica's first event arrives: until then another replica can still take it.
    let started = false;
    const failed = (failure: ApiError, eject: boolean): FailedBeforeFirstByte => {
      outcome = { ok: false, error: failure.message, eject };
      return new FailedBeforeFirstByte(failure);
    };

    const sentAt = performance.now();
    try {
      armTimer();
      let response: Response;
      try {
        response = await fetch(`${replica.settings.baseUrl}${request.path}`, { method: "POST", headers: this.headers(replica), body: JSON.stringify(request.body), signal });
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason ?? error;
        throw failed(relayFailure(host, timeoutMs, timedOut, error, ""), true);
      }
      call.answered();
      if (!response.ok) {
        const failure = await upstreamFailure(response, host, this.modelId);
        // A replica at capacity (429, 503) is not broken: the next one may take the request, nobody is ejected.
        if (response.status === 429 || response.status === 503) throw failed(failure, false);
        if (response.status >= 500) throw failed(failure, true);
        if (response.status === 401 || response.status === 402 || response.status === 403) outcome = { ok: false, error: failure.message, eject: false };
        throw failure;
      }
      if (!response.body) throw failed(new UpstreamError(`The upstream chat server at ${host} sent an empty answer`), true);

      const stream = new UpstreamStream(request.count, options.onDelta);
      const cutShort = (failure: ApiError, eject: boolean): Error => {
        outcome = { ok: false, error: failure.message, eject };
        if (!started) return new FailedBeforeFirstByte(failure);
        return new GenerationCutShortError(failure.message, failure.status, stream.result(null, request.promptEstimate, sentAt));
      };
      try {
        for await (const data of readSseEvents(response.body, armTimer)) {
          if (!started) {
            started = true;
            options.onStart?.();
          }
          if (data.trim() === "[DONE]") {
            stream.done = true;
            break;
          }
          stream.accept(request.toChatChunk(parseChunk(data, host)));
        }
      } catch (error) {
        if (options.signal?.aborted && !timedOut) return stream.result("abort", request.promptEstimate, sentAt);
        // The connection broke or went silent: the replica is in trouble. An error event is the upstream's own answer.
        throw cutShort(relayFailure(host, timeoutMs, timedOut, error, "mid-stream"), timedOut || !(error instanceof ApiError));
      }
      if (!stream.done && !stream.finished()) throw cutShort(new UpstreamError(`The upstream chat server at ${host} ended the stream before the answer was complete`, 502), true);
      return stream.result(null, request.promptEstimate, sentAt);
    } finally {
      clearTimeout(timer);
      // Stops the upstream's generation when the caller left, timed out or the stream ended early.
      controller.abort();
      this.inFlight.delete(controller);
      call.end(outcome);
    }
  }

  private headers(replica: Replica): Record<string, string> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
    if (replica.settings.apiKey) headers.authorization = `Bearer ${replica.settings.apiKey}`;
    return headers;
  }

  async dispose(): Promise<void> {
    this.replicaPool.dispose();
    for (const controller of this.inFlight) controller.abort(new Error("the model is shutting down"));
  }
}

/** Not reachable at all: 503, as for a local model that cannot serve; broken off mid-answer: 502; silent too long: 504. */
function relayFailure(host: string, timeoutMs: number, timedOut: boolean, error: unknown, phase: "" | "mid-stream"): ApiError {
  if (timedOut) return new UpstreamError(`The upstream chat server at ${host} did not answer within ${timeoutMs} ms ${phase}`, 504);
  if (error instanceof ApiError) return error;
  if (phase === "") return new UpstreamError(`The upstream chat server at ${host} could not be reached: ${fetchFailureCause(error)}`, 503);
  return new UpstreamError(`The upstream chat server at ${host} failed ${phase}: ${fetchFailureCause(error)}`, 502);
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

/** The context window the upstream lists for the model (Hearth: context_length, vLLM: max_model_len), from the first replica that says. */
async function fetchContextSize(replicas: readonly Replica[], model: string, timeoutMs: number): Promise<number | undefined> {
  for (const { settings } of replicas) {
    try {
      const response = await fetch(`${settings.baseUrl}/models`, {
        headers: settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {},
        signal: AbortSignal.timeout(Math.min(10_000, timeoutMs)),
      });
      if (!response.ok) continue;
      const list = (await response.json()) as { data?: { id?: string; context_length?: unknown; max_model_len?: unknown }[] };
      const record = list.data?.find((m) => m.id === model);
      const size = Number(record?.context_length ?? record?.max_model_len);
      if (Number.isInteger(size) && size > 0) return size;
    } catch {
      // This replica is down or slow: ask the next.
    }
  }
  return undefined;
}
