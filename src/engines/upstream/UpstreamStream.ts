import type { ChatChoiceResult, ChatDelta, ChatGenerateResult, FinishReason, TokenLogprob, ToolCall } from "../types.js";
import { UpstreamError } from "../../errors.js";
import { upstreamErrorMessage } from "./upstreamFailure.js";
import { upstreamToolCallId } from "./upstreamToolCallId.js";

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
export interface WireChunk {
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

export function parseChunk(data: string, host: string): WireChunk {
  let chunk: WireChunk;
  try {
    chunk = JSON.parse(data) as WireChunk;
  } catch {
    throw new UpstreamError(`The upstream chat server at ${host} sent a stream event that is not JSON`);
  }
  // An error after the stream started arrives as an event of its own.
  if (chunk.error !== undefined) throw new UpstreamError(`The upstream chat server at ${host} failed mid-stream: ${upstreamErrorMessage(chunk.error) ?? "unknown error"}`);
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
export class UpstreamStream {
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
export function fromCompletionChunk(chunk: WireChunk): WireChunk {
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
