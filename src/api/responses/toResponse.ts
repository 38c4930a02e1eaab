import type { ChatGenerateResult } from "../../engines/types.js";
import type { ChatCompletionResponse, ChoiceLogprobs, WebSearchCitation } from "../chat/schema.js";
import { itemId } from "./itemId.js";
import type { OutputItem, OutputLogprob, ResponseObject, ResponseRequest, ResponseUsage, UrlCitation } from "./schema.js";

/** Pure translations from the chat service's answer to the Responses standard's response. */

/** The response before any output: what the request asked for, echoed as the standard does. */
export function responseSkeleton(request: ResponseRequest, init: { id: string; createdAt: number; model: string; store: boolean }): ResponseObject {
  const format = request.text?.format ?? { type: "text" };
  return {
    id: init.id,
    object: "response",
    created_at: init.createdAt,
    status: "in_progress",
    error: null,
    incomplete_details: null,
    model: init.model,
    output: [],
    output_text: "",
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: request.reasoning?.summary ?? null },
    store: init.store,
    temperature: request.temperature ?? null,
    text: { format: format as Record<string, unknown> },
    tool_choice: (request.tool_choice ?? "auto") as ResponseObject["tool_choice"],
    tools: (request.tools ?? []) as ResponseObject["tools"],
    top_logprobs: request.top_logprobs ?? null,
    top_p: request.top_p ?? null,
    truncation: request.truncation ?? "disabled",
    user: request.user ?? null,
    safety_identifier: request.safety_identifier ?? null,
    prompt_cache_key: request.prompt_cache_key ?? null,
    usage: null,
    cost: { usd: 0, diem: 0 },
  };
}

export function toResponseUsage(result: ChatGenerateResult): ResponseUsage {
  return {
    input_tokens: result.promptTokens,
    input_tokens_details: { cached_tokens: result.cachedTokens },
    output_tokens: result.completionTokens,
    output_tokens_details: { reasoning_tokens: result.reasoningTokens },
    total_tokens: result.promptTokens + result.completionTokens,
  };
}

/** The finished response: its output, status (incomplete when the token limit cut it), usage and cost. */
export function finishResponse(skeleton: ResponseObject, output: OutputItem[], result: ChatGenerateResult, cost: ResponseObject["cost"]): ResponseObject {
  const cut = result.finishReason === "length";
  return {
    ...skeleton,
    status: cut ? "incomplete" : "completed",
    incomplete_details: cut ? { reason: "max_output_tokens" } : null,
    output,
    output_text: outputText(output),
    usage: toResponseUsage(result),
    cost,
  };
}

export function outputText(output: readonly OutputItem[]): string {
  return output.flatMap((item) => (item.type === "message" ? item.content.map((part) => part.text) : [])).join("");
}

/** The web search the chat service ran, as the standard's output item (first in the output, as it came first). */
export function webSearchItem(sources: readonly WebSearchCitation[]): OutputItem {
  return { type: "web_search_call", id: itemId("ws"), status: "completed", action: { type: "search", query: "", sources: sources.map((s) => ({ type: "url", url: s.url })) } };
}

/**
 * The model cites source i as `[REF]i[/REF]` (chat's citation form): each marker is a
 * url_citation annotation spanning it in the text (offsets in characters).
 */
export function citationsIn(text: string, sources: readonly WebSearchCitation[] | undefined): UrlCitation[] {
  if (!sources?.length) return [];
  const citations: UrlCitation[] = [];
  for (const match of text.matchAll(/\[REF\](\d+)\[\/REF\]/g)) {
    const source = sources[Number(match[1])];
    if (!source) continue;
    citations.push({ type: "url_citation", url: source.url, title: source.title, start_index: match.index, end_index: match.index + match[0].length });
  }
  return citations;
}

/** Chat's log probabilities (its `content` list) in the Responses shape. */
export function toOutputLogprobs(logprobs: ChoiceLogprobs | null | undefined): OutputLogprob[] {
  return (logprobs?.content ?? []).map((entry) => ({ token: entry.token, logprob: entry.logprob, bytes: entry.bytes, top_logprobs: entry.top_logprobs }));
}

export interface OutputOptions {
  /** include: ["message.output_text.logprobs"]. */
  logprobs: boolean;
  /** reasoning.summary asked: the thought is also the reasoning item's summary. */
  summary: boolean;
  sources: readonly WebSearchCitation[] | undefined;
  /** The items are cut short (the token limit): their status says so. */
  incomplete: boolean;
}

/** A whole chat answer as output items: its thought, its message, its function calls, in the order the model wrote them. */
export function toOutputItems(choice: ChatCompletionResponse["choices"][number], options: OutputOptions): OutputItem[] {
  const status = options.incomplete ? "incomplete" : "completed";
  const items: OutputItem[] = [];
  if (options.sources) items.push(webSearchItem(options.sources));
  const { message } = choice;
  if (message.reasoning_content) items.push(reasoningItem(itemId("rs"), message.reasoning_content, options.summary, status));
  if (message.content || !message.tool_calls?.length) {
    const text = message.content ?? "";
    items.push({
      type: "message",
      id: itemId("msg"),
      status,
      role: "assistant",
      content: [
        {
          type: "output_text",
          text,
          annotations: citationsIn(text, options.sources),
          ...(options.logprobs ? { logprobs: toOutputLogprobs(choice.logprobs) } : {}),
        },
      ],
    });
  }
  for (const call of message.tool_calls ?? []) {
    items.push({ type: "function_call", id: itemId("fc"), call_id: call.id, name: call.function.name, arguments: call.function.arguments, status: "completed" });
  }
  return items;
}

export function reasoningItem(id: string, text: string, summary: boolean, status: "in_progress" | "completed" | "incomplete"): Extract<OutputItem, { type: "reasoning" }> {
  return { type: "reasoning", id, summary: summary ? [{ type: "summary_text", text }] : [], content: [{ type: "reasoning_text", text }], status };
}
