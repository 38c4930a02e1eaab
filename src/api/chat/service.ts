import type { AppDeps } from "../../appDeps.js";
import type { Cost } from "../../billing/credits.js";
import { maxTextCost, textCost } from "../../billing/pricing.js";
import type { RequestMeter } from "../../billing/RequestMeter.js";
import type { Character } from "../../characters/Character.js";
import type { CharacterCatalog } from "../../characters/CharacterCatalog.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError } from "../../errors.js";
import { PlanRefusalError, type PlanRefusal } from "../../engines/PlanRefusal.js";
import type { ChatEngine, ChatFeatures, ChatGenerateOptions, ChatGenerateResult, PlannedChat } from "../../engines/types.js";
import type { Metrics } from "../../metrics/Metrics.js";
import type { ModelManager } from "../../models/ModelManager.js";
import {
  assembleConversation,
  checkTokenIds,
  engineFormat,
  toChoiceCount,
  toEngineMessages,
  toLogprobs,
  toPromptCache,
  toReasoning,
  requireFunctionCalling,
  requireStructuredOutput,
  toResponseFormat,
  toSampling,
  toToolOptions,
} from "./fromChatRequest.js";
import { checkPromptLength, checkPromptTokens } from "./promptBound.js";
import type { ContentPartLimits } from "./contentParts.js";
import { parseModelSuffix } from "./modelSuffix.js";
import {
  MAX_TOP_LOGPROBS,
  SERVICE_PARAMETER_DEFAULTS,
  type AppliedServiceParameters,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
  type ServiceParametersEcho,
} from "./schema.js";
import { toChoice, toChunkChoice, toUsage, toWireFinish } from "./toChatCompletion.js";
import { documentsToolCall, placeWebContext, type WebAugmentation, WebAugmenter } from "./webSearch.js";
import { uploadByteLimit } from "../../http/bodyLimits.js";
import { withDeadline } from "../../http/withDeadline.js";
import { GenerationCutShortError } from "../../engines/GenerationCutShortError.js";
import { startStreamedGeneration } from "./streamedGeneration.js";
import type { SchemaCheck } from "./schemaCheck.js";
import type { MeteredRequest } from "../../http/meteredRequest.js";
import type { RequestContext } from "../../http/requestContext.js";

export interface PreparedChat {
  id: string;
  created: number;
  entry: ModelEntry;
  engine: ChatEngine;
  /** What the engine is asked to plan. */
  options: ChatGenerateOptions;
  echo: ServiceParametersEcho;
  includeUsageChunk: boolean;
  /** strip_thinking_response / disable_thinking: thoughts are not shown. */
  stripReasoning: boolean;
  logprobs: boolean;
  /** Response headers this request adds (e.g. parameters accepted but not supported here). */
  headers: Record<string, string>;
  meter: RequestMeter;
  /** Holds the planned request's most tokens against the key's TPM (429). */
  reserveTokens: (count: number) => void;
  /** Web search / scraping: the sources, their billing and how the response shows them. */
  web: WebAugmentation;
  /** A response_format schema with keywords the grammar could not hold: checked on the finished output. */
  schemaCheck?: SchemaCheck;
}

/** A chat request checked against what needs only the request: the model, character and parameters it resolved to. */
export interface ResolvedChat {
  request: ChatCompletionRequest;
  entry: ModelEntry;
  params: AppliedServiceParameters;
  character: Character | undefined;
  webMode: ReturnType<WebAugmenter["mode"]>;
  requestedTools: ReturnType<typeof toToolOptions>;
  requestedFormat: ReturnType<typeof toResponseFormat>;
}

/**
 * What `prepare` needs of the paid request it serves (admitted by the route): credit meters
 * (the chat model's, and one per model transcribing an audio part), the lease, the TPM
 * reservation made once the engine has planned, and the signal that says the caller went away
 * (stop reading parts, fetching pages and searching).
 */
export type ChatCall = Pick<MeteredRequest, "reserveTokens" | "meterFor" | "hold" | "signal"> & { ctx: Pick<RequestContext, "requestId" | "holdBytes"> };

/** Wire request -> engine options -> wire response. Knows nothing about Express. */
export class ChatService {
  constructor(
    private readonly models: ModelManager,
    private readonly characters: CharacterCatalog,
    private readonly requestTimeoutMs: number,
    private readonly web: WebAugmenter,
    private readonly partLimits: ContentPartLimits,
    private readonly metrics: Metrics,
    /** http(s) URLs in image and video parts are fetched (the operator's --web-scraping on). */
    private readonly fetchMediaUrls = false,
  ) {}

  /** The service as the routes that translate into chat (chat, responses) build it from the app. */
  static fromDeps(deps: Pick<AppDeps, "config" | "logger" | "models" | "characters" | "metrics">): ChatService {
    const { config } = deps;
    return new ChatService(
      deps.models,
      deps.characters,
      config.requestTimeoutMs,
      WebAugmenter.fromConfig(config, deps.logger),
      { maxFileBytes: uploadByteLimit(config), maxFileChars: config.maxFileChars, requestTimeoutMs: config.requestTimeoutMs },
      deps.metrics,
      config.webScraping === "on",
    );
  }

  /**
   * Every check that needs only the request, before any paid or slow work: the route admits
   * the request (rate limit) between this and `prepare`, so a refused request costs nothing.
   */
  resolve(request: ChatCompletionRequest): ResolvedChat {
    const suffix = request.model !== undefined ? parseModelSuffix(request.model) : undefined;
    // Explicit body fields win over the suffix, which wins over the defaults.
    const explicit = Object.fromEntries(Object.entries(request.service_parameters).filter(([, v]) => v !== undefined)) as typeof request.service_parameters;
    const params = { ...SERVICE_PARAMETER_DEFAULTS, ...suffix?.parameters, ...explicit } as AppliedServiceParameters;

    const character = this.character(params.character_slug, explicit.character_slug === undefined && suffix?.parameters.character_slug !== undefined);
    const modelId = suffix?.modelId ?? character!.modelId;
    const entry = this.models.get(modelId, "text");
    // Every check that needs only the request comes before any paid or slow work.
    const webMode = this.web.mode(request, params); // `on` without a search provider is a 400
    const requestedTools = toToolOptions(request);
    const requestedFormat = toResponseFormat(request);
    const loaded = this.models.loadedEngine(entry.id);
    if (loaded?.kind === "chat") checkPromptLength(request, loaded, entry.id);
    return { request, entry, params, character, webMode, requestedTools, requestedFormat };
  }

  /** The paid, slow part: web search, content parts, the lease, the engine options. */
  async prepare(resolved: ResolvedChat, call: ChatCall): Promise<PreparedChat> {
    const { request, entry, params, character, webMode, requestedTools, requestedFormat } = resolved;
    const { requestId } = call.ctx;
    const { signal } = call;
    const meterFor = (model: ModelEntry) => call.meterFor(model.id);
    // The price is known only once the prompt is (web results, documents and audio read), which
    // can take seconds of work: a caller who cannot pay for one token is refused before it.
    meterFor(entry).requireAffordable(maxTextCost(entry, 1, 1));
    // Searching before reading parts: a failing provider (502) answers before audio is transcribed and billed.
    const web = await this.web.gather(request, params, webMode, requestId, signal);
    const callerMessages = await toEngineMessages(request.messages, {
      entry,
      models: this.models,
      meterFor,
      limits: this.partLimits,
      signal,
      visual: this.models.visualInput(entry),
      fetchUrls: this.fetchMediaUrls,
      holdBytes: call.ctx.holdBytes,
    });
    const { messages, positionOf } = assembleConversation(callerMessages, entry, params, character);

    const conversation = placeWebContext(messages, positionOf, web);
    // Held until the request ends (the metered request releases it).
    const { engine } = call.hold(await this.models.acquire(entry.id, "chat"));
    checkPromptLength(request, engine, entry.id, conversation.messages);
    await checkPromptTokens(engine, entry.id, conversation.messages, request);
    const { features } = engine;
    const stop = request.stop == null ? [] : typeof request.stop === "string" ? [request.stop] : request.stop;
    const logprobs = toLogprobs(request, entry.id, features);
    const headers: Record<string, string> = {};
    // Accepted, not honoured: fields a local node has no use for, and sampling fields the engine ignores.
    const unsupported = [...unsupportedParameters(request, params), ...unsupportedSampling(request, features)];
    if (unsupported.length > 0) headers["x-service-unsupported-parameters"] = unsupported.join(",");
    const schemaCheck = requestedFormat?.type === "json_schema" ? requestedFormat.check : undefined;
    // Streaming can only say which keywords are left to the check: the check's answer comes with the whole output.
    if (schemaCheck) headers["x-service-schema-unenforced"] = schemaCheck.unenforced.join(",");
    if (logprobs && (request.top_logprobs ?? 0) > MAX_TOP_LOGPROBS) headers["x-service-clamped-parameters"] = `top_logprobs=${MAX_TOP_LOGPROBS}`;
    const meter = meterFor(entry);
    return {
      id: `chatcmpl-${requestId.replaceAll("-", "")}`,
      created: Math.floor(Date.now() / 1000),
      entry,
      engine,
      options: {
        messages: conversation.messages,
        maxTokens: request.max_completion_tokens ?? request.max_tokens ?? entry.maxCompletionTokens,
        sampling: toSampling(request, entry, features),
        stop: stop.filter((s) => s.length > 0),
        stopTokenIds: request.stop_token_ids ?? undefined,
        choices: toChoiceCount(request, entry.id, features),
        logprobs,
        tools: requireFunctionCalling(requestedTools, entry.id, features),
        responseFormat: requireStructuredOutput(engineFormat(requestedFormat), entry.id, features),
        reasoning: toReasoning(request, params),
        cache: toPromptCache(request, conversation.positionOf),
      },
      echo: {
        enable_e2ee: false,
        enable_web_search: web.mode,
        enable_web_citations: params.enable_web_citations,
        enable_web_scraping: params.enable_web_scraping,
        enable_x_search: false,
        include_service_system_prompt: params.include_service_system_prompt,
        include_search_results_in_stream: params.include_search_results_in_stream,
        return_search_results_as_documents: params.return_search_results_as_documents,
        strip_thinking_response: params.strip_thinking_response,
        disable_thinking: params.disable_thinking,
        ...(character ? { character_slug: character.slug } : {}),
        ...(web.sources ? { web_search_citations: web.sources } : {}),
      },
      includeUsageChunk: request.stream_options?.include_usage === true,
      stripReasoning: params.strip_thinking_response || params.disable_thinking,
      logprobs: logprobs !== undefined,
      headers,
      meter,
      reserveTokens: (count) => call.reserveTokens(count),
      web,
      ...(schemaCheck ? { schemaCheck } : {}),
    };
  }

  private character(slug: string | undefined, fromSuffix: boolean): Character | undefined {
    if (slug === undefined) return undefined;
    const character = this.characters.get(slug);
    if (!character) {
      const path = fromSuffix ? ["model", "character_slug"] : ["service_parameters", "character_slug"];
      throw InvalidRequestError.forField(path, `no character with slug "${slug}" on this node (GET /characters lists them)`);
    }
    return character;
  }

  /**
   * The engine plans the request (renders and measures the prompt, refuses what the model
   * cannot do), then the most it can use is reserved, tokens per minute and credits, before
   * anything runs. A refusal or a 402/429 here comes before any byte of the response.
   */
  private async plan(chat: PreparedChat): Promise<PlannedChat> {
    checkTokenIds("stop_token_ids", (chat.options.stopTokenIds ?? []).entries(), chat.engine.features);
    checkTokenIds(
      "logit_bias",
      Array.from(chat.options.sampling.logitBias?.keys() ?? [], (id) => [String(id), id] as const),
      chat.engine.features,
    );
    let planned: PlannedChat;
    try {
      planned = await chat.engine.plan(chat.options);
    } catch (error) {
      throw error instanceof PlanRefusalError ? toInvalidRequest(error.refusal) : error;
    }
    chat.reserveTokens(planned.promptTokens + planned.maxTokens);
    chat.meter.reserve([...maxTextCost(chat.entry, planned.promptTokens, planned.maxTokens), ...chat.web.costLines]);
    return planned;
  }

  /** Non-streaming: the whole completion, or 504 past the configured timeout. */
  async complete(chat: PreparedChat, clientSignal: AbortSignal): Promise<{ response: ChatCompletionResponse; result: ChatGenerateResult; headers: Record<string, string> }> {
    const planned = await this.plan(chat);
    const timer = this.metrics.chatTimer(chat.entry.id);
    const result = await withDeadline(clientSignal, this.requestTimeoutMs, (signal) =>
      planned.generate({ signal, onStart: () => timer.started(), onDelta: (index) => timer.piece(index) }),
    );
    timer.finished(result);
    const cost = settle(chat, result);
    const headers: Record<string, string> = {};
    // One verdict per choice, in index order: a choice cut short (finish_reason length) is not valid JSON.
    if (chat.schemaCheck) headers["x-service-schema-valid"] = result.choices.map((choice) => String(chat.schemaCheck!.valid(choice.content))).join(",");
    return {
      result,
      headers,
      response: {
        id: chat.id,
        object: "chat.completion",
        created: chat.created,
        model: chat.entry.id,
        choices: result.choices.map((choice) => withDocuments(chat, toChoice(choice, { stripReasoning: chat.stripReasoning }))),
        usage: toUsage(result),
        prompt_logprobs: null,
        cost,
        service_parameters: chat.echo,
      },
    };
  }

  /**
   * Streaming: yields chunks as tokens arrive; the last value returned is the engine result
   * (for metering). Aborting `signal` stops generation at once and frees the sequences.
   */
  async *stream(chat: PreparedChat, signal: AbortSignal): AsyncGenerator<ChatCompletionChunk, ChatGenerateResult | undefined> {
    const planned = await this.plan(chat);
    const base = { id: chat.id, object: "chat.completion.chunk" as const, created: chat.created, model: chat.entry.id };
    const usageField = chat.includeUsageChunk ? { usage: null } : {};
    const shown = { stripReasoning: chat.stripReasoning, logprobs: chat.logprobs };
    const { queue, generation } = await startStreamedGeneration<ChatGenerateResult, ChatCompletionChunk["choices"][number]>(
      this.metrics.chatTimer(chat.entry.id),
      ({ onStart, onPiece }, queue) =>
        planned.generate({
          signal,
          onStart,
          onDelta: (index, delta) => {
            onPiece(index);
            const choice = toChunkChoice(index, delta, shown);
            if (choice) queue.push(choice);
          },
        }),
    );

    const count = chat.options.choices ?? 1;
    const indexes = Array.from({ length: count }, (_, i) => i);
    if (chat.web.sourcesInStream) yield { ...base, choices: [], service_search_results: chat.web.sources, ...usageField };
    const echo = chat.web.sources ? { service_parameters: chat.echo } : {};
    yield {
      ...base,
      choices: indexes.map((index) => ({ index, delta: { role: "assistant" as const, content: "" }, finish_reason: null, logprobs: null })),
      ...usageField,
      ...echo,
    };
    let result: ChatGenerateResult;
    try {
      for await (const choice of queue) yield { ...base, choices: [choice], ...usageField };
      result = await generation;
    } catch (error) {
      // A relay whose upstream died mid-stream says what it had streamed: that is charged, then the stream ends with the error.
      if (error instanceof GenerationCutShortError) settle(chat, error.partial);
      throw error;
    }
    // A client that went away pays for what was produced.
    const cost = settle(chat, result);
    if (result.finishReason === "abort") return result;
    if (chat.web.sourcesAsDocuments) {
      for (const choice of result.choices) {
        const call = documentsToolCall(chat.web, chat.id, choice.index);
        const delta = { tool_calls: [{ index: choice.toolCalls.length, ...call }] };
        yield { ...base, choices: [{ index: choice.index, delta, finish_reason: null, logprobs: null }], ...usageField };
      }
    }
    for (const [position, choice] of result.choices.entries()) {
      const last = position === result.choices.length - 1;
      yield {
        ...base,
        choices: [{ index: choice.index, delta: {}, finish_reason: toWireFinish(choice.finishReason), logprobs: null }],
        ...usageField,
        ...(last ? { cost } : {}),
      };
    }
    if (chat.includeUsageChunk) yield { ...base, choices: [], usage: toUsage(result), cost };
    return result;
  }
}

/**
 * Fields a client may send that this node accepts but does not honour, named in
 * x-service-unsupported-parameters when they would change the answer: a local model has no
 * native X search, completions are not stored for later retrieval, there is no verbosity
 * control or longer prompt-cache retention, and chat answers carry no reasoning summary.
 */
function unsupportedParameters(request: ChatCompletionRequest, params: AppliedServiceParameters): string[] {
  const names: string[] = [];
  if (params.enable_x_search || request.tools?.some((t) => t.type === "x_search")) names.push("enable_x_search");
  if (request.store === true) names.push("store");
  if (request.verbosity != null) names.push("verbosity");
  if (request.prompt_cache_retention != null && request.prompt_cache_retention !== "default") names.push("prompt_cache_retention");
  if (request.reasoning?.summary != null) names.push("reasoning.summary");
  return names;
}

/** The wire names of sampling fields the request set and the engine ignores (for x-service-unsupported-parameters). */
const SAMPLING_WIRE_NAMES: Partial<Record<keyof ChatGenerateOptions["sampling"], keyof ChatCompletionRequest>> = {
  topP: "top_p",
  topK: "top_k",
  minP: "min_p",
  seed: "seed",
  repetitionPenalty: "repetition_penalty",
  frequencyPenalty: "frequency_penalty",
  presencePenalty: "presence_penalty",
  logitBias: "logit_bias",
};
function unsupportedSampling(request: ChatCompletionRequest, features: ChatFeatures): string[] {
  return (features.ignoredSampling ?? []).flatMap((field) => {
    const wire = SAMPLING_WIRE_NAMES[field];
    const value = wire !== undefined ? request[wire] : undefined;
    return value != null && !(typeof value === "object" && Object.keys(value).length === 0) ? [wire!] : [];
  });
}

/** What a chat engine refuses while planning, as the wire's 400. */
function toInvalidRequest(refusal: PlanRefusal): Error {
  if (refusal.kind === "promptTooLong") {
    return InvalidRequestError.forField(
      ["messages"],
      `the prompt is ${refusal.promptTokens} tokens but this model's context holds ${refusal.contextSize}; shorten the conversation`,
    );
  }
  // The other refusals are of completion prompts: a chat request cannot cause them.
  return new Error(`unexpected chat plan refusal: ${refusal.kind}`);
}

/** return_search_results_as_documents: the sources as one more tool call of the answer. */
function withDocuments(chat: PreparedChat, choice: ChatCompletionResponse["choices"][number]): ChatCompletionResponse["choices"][number] {
  if (!chat.web.sourcesAsDocuments) return choice;
  const calls = choice.message.tool_calls ?? [];
  return { ...choice, message: { ...choice.message, tool_calls: [...calls, documentsToolCall(chat.web, chat.id, choice.index)] } };
}

/** Charges the produced tokens of every choice (settling is idempotent: the route settles again in `finally`). */
function settle(chat: PreparedChat, result: ChatGenerateResult): Cost {
  return chat.meter.settle(
    textCost(chat.entry, {
      promptTokens: result.promptTokens,
      cachedTokens: result.cachedTokens,
      cacheWriteTokens: result.cacheWriteTokens,
      completionTokens: result.completionTokens,
    }).concat(chat.web.costLines),
  );
}
