import type { Cost } from "../../billing/credits.js";
import { maxTextCost, textCost } from "../../billing/pricing.js";
import type { RequestMeter } from "../../billing/RequestMeter.js";
import type { ModelEntry } from "../../config.js";
import { InvalidRequestError, RequestTimeoutError } from "../../errors.js";
import type { ChatEngine, ChatGenerateResult, ChatMessage, SamplingOptions } from "../../engines/types.js";
import type { ModelManager } from "../../models/ModelManager.js";
import type {
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatCompletionResponse,
  ChatMessageWire,
  ServiceParametersEcho,
  Usage,
} from "./schema.js";

export interface PreparedChat {
  id: string;
  created: number;
  entry: ModelEntry;
  engine: ChatEngine;
  messages: ChatMessage[];
  sampling: SamplingOptions;
  maxTokens: number | undefined;
  stop: string[];
  echo: ServiceParametersEcho;
  includeUsageChunk: boolean;
  meter: RequestMeter;
}

export interface ChatOutcome {
  result: ChatGenerateResult;
}

/** Wire request -> engine options -> wire response. Knows nothing about Express. */
export class ChatService {
  constructor(
    private readonly models: ModelManager,
    private readonly requestTimeoutMs: number,
  ) {}

  async prepare(request: ChatCompletionRequest, requestId: string, meterFor: (entry: ModelEntry) => RequestMeter): Promise<PreparedChat> {
    const entry = this.models.get(request.model, "text");
    const params = request.service_parameters;
    if (params.enable_web_search === "on") {
      throw InvalidRequestError.forField(["service_parameters", "enable_web_search"], "web search is not configured on this node");
    }
    const includeSystemPrompt = params.include_service_system_prompt;
    const messages = toEngineMessages(request.messages);
    if (includeSystemPrompt && entry.systemPrompt) messages.unshift({ role: "system", content: entry.systemPrompt });

    const engine = await this.models.chat(entry.id);
    const stop = request.stop == null ? [] : typeof request.stop === "string" ? [request.stop] : request.stop;
    return {
      id: `chatcmpl-${requestId.replaceAll("-", "")}`,
      created: Math.floor(Date.now() / 1000),
      entry,
      engine,
      messages,
      sampling: {
        temperature: request.temperature ?? entry.constraints.temperature.default,
        topP: request.top_p ?? entry.constraints.top_p.default,
        topK: request.top_k ?? undefined,
        minP: request.min_p ?? undefined,
        seed: request.seed ?? undefined,
        repetitionPenalty: request.repetition_penalty ?? undefined,
        frequencyPenalty: request.frequency_penalty ?? undefined,
        presencePenalty: request.presence_penalty ?? undefined,
      },
      maxTokens: request.max_completion_tokens ?? request.max_tokens ?? entry.maxCompletionTokens,
      stop: stop.filter((s) => s.length > 0),
      echo: {
        enable_e2ee: false,
        enable_web_search: params.enable_web_search,
        enable_web_citations: false,
        enable_web_scraping: false,
        include_service_system_prompt: includeSystemPrompt,
        include_search_results_in_stream: false,
        return_search_results_as_documents: false,
        strip_thinking_response: false,
        disable_thinking: false,
      },
      includeUsageChunk: request.stream_options?.include_usage === true,
      meter: meterFor(entry),
    };
  }

  /** Non-streaming: the whole completion, or 504 past the configured timeout. */
  async complete(chat: PreparedChat, clientSignal: AbortSignal): Promise<{ response: ChatCompletionResponse; result: ChatGenerateResult }> {
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    const signal = AbortSignal.any([clientSignal, timeout]);
    let result: ChatGenerateResult;
    try {
      result = await chat.engine.generate({ ...this.generateOptions(chat), signal });
    } catch (error) {
      if (timeout.aborted) throw new RequestTimeoutError();
      throw error;
    }
    if (timeout.aborted && !clientSignal.aborted) throw new RequestTimeoutError();
    const cost = this.settle(chat, result);
    const finishReason = result.finishReason === "length" ? "length" : "stop";
    return {
      result,
      response: {
        id: chat.id,
        object: "chat.completion",
        created: chat.created,
        model: chat.entry.id,
        choices: [
          {
            index: 0,
            finish_reason: finishReason,
            stop_reason: finishReason,
            logprobs: null,
            message: { role: "assistant", content: result.text, reasoning_content: null, tool_calls: null },
          },
        ],
        usage: toUsage(result),
        prompt_logprobs: null,
        cost,
        service_parameters: chat.echo,
      },
    };
  }

  private generateOptions(chat: PreparedChat) {
    return {
      messages: chat.messages,
      maxTokens: chat.maxTokens,
      sampling: chat.sampling,
      stop: chat.stop,
      // Reserve the most this request can cost once its prompt is measured, before inference.
      onPromptReady: (plan: { promptTokens: number; maxTokens: number }) => chat.meter.reserve(maxTextCost(chat.entry, plan.promptTokens, plan.maxTokens)),
    };
  }

  /** Charges what was produced (a disconnected client pays for the tokens it was sent). */
  private settle(chat: PreparedChat, result: ChatGenerateResult): Cost {
    return chat.meter.settle(
      textCost(chat.entry, { promptTokens: result.promptTokens, cachedTokens: result.cachedTokens, cacheWriteTokens: 0, completionTokens: result.completionTokens }),
    );
  }

  /**
   * Streaming: yields chunks as tokens arrive; the last value returned is the engine result
   * (for metering). Aborting `signal` stops generation at once and frees the sequence.
   */
  async *stream(chat: PreparedChat, signal: AbortSignal): AsyncGenerator<ChatCompletionChunk, ChatGenerateResult | undefined> {
    const base = { id: chat.id, object: "chat.completion.chunk" as const, created: chat.created, model: chat.entry.id };
    const usageField = chat.includeUsageChunk ? { usage: null } : {};
    const queue = new AsyncQueue<string>();
    const generation = chat.engine
      .generate({ ...this.generateOptions(chat), signal, onText: (t) => queue.push(t) })
      .finally(() => queue.close());
    // Surface a failure of the generation through the loop below instead of as an unhandled rejection.
    generation.catch((error: unknown) => queue.fail(error));

    yield { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null, logprobs: null }], ...usageField };
    for await (const text of queue) {
      yield { ...base, choices: [{ index: 0, delta: { content: text }, finish_reason: null, logprobs: null }], ...usageField };
    }
    const result = await generation;
    const cost = this.settle(chat, result);
    if (result.finishReason === "abort") return result;
    const finishReason = result.finishReason === "length" ? "length" : "stop";
    yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: finishReason, logprobs: null }], ...usageField, cost };
    if (chat.includeUsageChunk) yield { ...base, choices: [], usage: toUsage(result), cost };
    return result;
  }
}

function toUsage(result: ChatGenerateResult): Usage {
  return {
    prompt_tokens: result.promptTokens,
    completion_tokens: result.completionTokens,
    total_tokens: result.promptTokens + result.completionTokens,
    prompt_tokens_details: { cached_tokens: result.cachedTokens },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

/** Flattens wire messages to the engine's: text parts joined, developer treated as system. */
export function toEngineMessages(messages: readonly ChatMessageWire[]): ChatMessage[] {
  return messages.map((message, index): ChatMessage => {
    const text = (content: unknown): string => {
      if (content == null) return "";
      if (typeof content === "string") return content;
      return (content as { type: string; text?: string }[])
        .map((part, partIndex) => {
          if (part.type === "text") return part.text ?? "";
          throw InvalidRequestError.forField(
            ["messages", index, "content", partIndex, "type"],
            `content parts of type "${part.type}" are not supported by this model`,
          );
        })
        .join("\n");
    };
    switch (message.role) {
      case "system":
      case "developer":
        return { role: "system", content: text(message.content) };
      case "user":
        return { role: "user", content: text(message.content) };
      case "assistant":
        return {
          role: "assistant",
          content: message.content == null ? null : text(message.content),
          reasoning: message.reasoning_content ?? null,
          toolCalls: message.tool_calls?.map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments })),
        };
      case "tool":
        return { role: "tool", content: text(message.content), toolCallId: message.tool_call_id };
    }
  });
}

/** A minimal push queue consumed with for-await; used to bridge engine callbacks to a generator. */
class AsyncQueue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private closed = false;
  private error: unknown;
  private wake: (() => void) | undefined;

  push(item: T): void {
    this.items.push(item);
    this.wake?.();
  }
  close(): void {
    this.closed = true;
    this.wake?.();
  }
  fail(error: unknown): void {
    this.error = error;
    this.close();
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.items.length) {
        yield this.items.shift()!;
        continue;
      }
      if (this.error) throw this.error;
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
