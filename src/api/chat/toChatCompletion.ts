import type { ChatChoiceResult, ChatDelta, ChatGenerateResult, FinishReason, TokenLogprob } from "../../engines/types.js";
import type { ChatCompletionChunk, ChatCompletionResponse, ChoiceLogprobs, Usage } from "./schema.js";

/** Pure translations from engine results to the wire's response and stream chunks. */

type WireFinish = "stop" | "length" | "tool_calls";

export function toWireFinish(reason: FinishReason): WireFinish {
  return reason === "length" ? "length" : reason === "tool_calls" ? "tool_calls" : "stop";
}

export function toUsage(result: ChatGenerateResult): Usage {
  return {
    prompt_tokens: result.promptTokens,
    completion_tokens: result.completionTokens,
    total_tokens: result.promptTokens + result.completionTokens,
    prompt_tokens_details: { cached_tokens: result.cachedTokens, cache_creation_input_tokens: result.cacheWriteTokens },
    completion_tokens_details: { reasoning_tokens: result.reasoningTokens },
  };
}

/** Both logprob shapes (see ChoiceLogprobs): the standard's per-token list and the reference's flat summary of it. */
export function toWireLogprobs(entries: readonly TokenLogprob[]): ChoiceLogprobs {
  const content = entries.map((e) => ({
    token: e.token,
    logprob: e.logprob,
    bytes: e.bytes,
    top_logprobs: e.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  }));
  return {
    content,
    refusal: null,
    token: content.map((c) => c.token).join(""),
    logprob: content.reduce((sum, c) => sum + c.logprob, 0),
    bytes: content.flatMap((c) => c.bytes),
    top_logprobs: content.length === 1 ? content[0]!.top_logprobs : [],
  };
}

export function toChoice(choice: ChatChoiceResult, options: { stripReasoning: boolean }): ChatCompletionResponse["choices"][number] {
  const finish = toWireFinish(choice.finishReason);
  const toolCalls = choice.toolCalls.map((call) => ({ id: call.id, type: "function" as const, function: { name: call.name, arguments: call.arguments } }));
  return {
    index: choice.index,
    finish_reason: finish,
    stop_reason: finish === "length" ? "length" : "stop",
    logprobs: choice.logprobs ? toWireLogprobs(choice.logprobs) : null,
    message: {
      role: "assistant",
      // The standard leaves content null when the answer is only tool calls.
      content: choice.content.length === 0 && toolCalls.length > 0 ? null : choice.content,
      reasoning_content: options.stripReasoning ? null : choice.reasoning,
      tool_calls: toolCalls.length > 0 ? toolCalls : null,
    },
  };
}

type ChunkChoice = ChatCompletionChunk["choices"][number];

/** One engine delta as a chunk's choice, or null when it is not shown (a stripped thought). */
export function toChunkChoice(index: number, delta: ChatDelta, options: { stripReasoning: boolean; logprobs: boolean }): ChunkChoice | null {
  const base = { index, finish_reason: null, logprobs: null };
  switch (delta.kind) {
    case "content":
      return { ...base, delta: { content: delta.text }, logprobs: options.logprobs ? toWireLogprobs(delta.logprobs ?? []) : null };
    case "reasoning":
      return options.stripReasoning ? null : { ...base, delta: { reasoning_content: delta.text } };
    case "toolCallStart":
      return { ...base, delta: { tool_calls: [{ index: delta.index, id: delta.id, type: "function", function: { name: delta.name, arguments: "" } }] } };
    case "toolCallArguments":
      return { ...base, delta: { tool_calls: [{ index: delta.index, function: { arguments: delta.text } }] } };
  }
}
