import type { ChatGenerateResult } from "../../engines/types.js";
import { toErrorResponse } from "../../errors.js";
import type { ChatCompletionChunk, WebSearchCitation } from "../chat/schema.js";
import { itemId } from "./itemId.js";
import type { OutputItem, OutputLogprob, ResponseObject, ResponseStreamEvent } from "./schema.js";
import { citationsIn, finishResponse, reasoningItem, toOutputLogprobs, webSearchItem } from "./toResponse.js";

/**
 * The Responses standard's event sequence, built from the chat service's stream chunks:
 * `response.created`, `response.in_progress`, then for each output item its `added`, its
 * deltas and its `done` events (a reasoning item, a message, function calls, in the order the
 * model writes them), then `response.completed` / `response.incomplete` (or `response.failed`).
 * Every event carries `sequence_number`, one more than the previous.
 */

type OpenItem =
  | { kind: "reasoning"; index: number; id: string; text: string }
  | { kind: "message"; index: number; id: string; text: string; logprobs: OutputLogprob[] }
  | { kind: "call"; index: number; id: string; callId: string; name: string; arguments: string; chatIndex: number };

export interface ResponseEventOptions {
  /** include: ["message.output_text.logprobs"]. */
  logprobs: boolean;
  /** reasoning.summary asked: the thought also streams as a summary. */
  summary: boolean;
}

export class ResponseEvents {
  private sequence = 0;
  private readonly output: OutputItem[] = [];
  private open: OpenItem | undefined;
  private sources: WebSearchCitation[] | undefined;

  constructor(
    private readonly skeleton: ResponseObject,
    private readonly options: ResponseEventOptions,
  ) {}

  /** The events that open the stream. */
  start(): ResponseStreamEvent[] {
    return [this.event("response.created", { response: this.skeleton }), this.event("response.in_progress", { response: this.skeleton })];
  }

  /** The events one chat chunk adds (none for the role chunk and the usage chunk). */
  fromChunk(chunk: ChatCompletionChunk): ResponseStreamEvent[] {
    const events: ResponseStreamEvent[] = [];
    const citations = chunk.service_parameters?.web_search_citations;
    if (citations && !this.sources) {
      this.sources = citations;
      events.push(...this.webSearch(citations));
    }
    for (const choice of chunk.choices) {
      const { delta } = choice;
      if (delta.reasoning_content) events.push(...this.reasoning(delta.reasoning_content));
      if (delta.content) events.push(...this.text(delta.content, this.options.logprobs ? toOutputLogprobs(choice.logprobs) : []));
      for (const call of delta.tool_calls ?? []) events.push(...this.toolCall(call.index, call.id, call.function.name, call.function.arguments));
    }
    return events;
  }

  /** Closes the open item and answers the terminal event with the whole response. */
  finish(result: ChatGenerateResult, cost: ResponseObject["cost"]): { events: ResponseStreamEvent[]; response: ResponseObject } {
    const incomplete = result.finishReason === "length";
    // An answer with neither text nor calls is still a message, as the whole response has it (see toOutputItems).
    const answered = this.open?.kind === "message" || this.open?.kind === "call" || this.output.some((item) => item.type === "message" || item.type === "function_call");
    const events = answered ? [] : this.openMessage();
    events.push(...this.close(incomplete ? "incomplete" : "completed"));
    const response = finishResponse(this.skeleton, this.output, result, cost);
    events.push(this.event(incomplete ? "response.incomplete" : "response.completed", { response }));
    return { events, response };
  }

  /** The terminal event of a stream that failed after it started. */
  failed(error: unknown): ResponseStreamEvent {
    const { status, body } = toErrorResponse(error);
    const code = status >= 500 ? "server_error" : (body.code ?? "invalid_request");
    return this.event("response.failed", { response: { ...this.skeleton, status: "failed", output: this.output, error: { code, message: body.error } } });
  }

  private event(type: string, fields: Record<string, unknown>): ResponseStreamEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }

  private webSearch(sources: WebSearchCitation[]): ResponseStreamEvent[] {
    const item = webSearchItem(sources);
    const output_index = this.output.push(item) - 1;
    const at = { item_id: item.id, output_index };
    return [
      this.event("response.output_item.added", { output_index, item: { ...item, status: "in_progress" } }),
      this.event("response.web_search_call.in_progress", at),
      this.event("response.web_search_call.searching", at),
      this.event("response.web_search_call.completed", at),
      this.event("response.output_item.done", { output_index, item }),
    ];
  }

  private reasoning(delta: string): ResponseStreamEvent[] {
    const events: ResponseStreamEvent[] = [];
    if (this.open?.kind !== "reasoning") {
      events.push(...this.close("completed"));
      const open: OpenItem = { kind: "reasoning", index: this.reserve(), id: itemId("rs"), text: "" };
      this.open = open;
      const at = { item_id: open.id, output_index: open.index };
      events.push(this.event("response.output_item.added", { output_index: open.index, item: reasoningItem(open.id, "", false, "in_progress") }));
      events.push(this.event("response.content_part.added", { ...at, content_index: 0, part: { type: "reasoning_text", text: "" } }));
      if (this.options.summary) events.push(this.event("response.reasoning_summary_part.added", { ...at, summary_index: 0, part: { type: "summary_text", text: "" } }));
    }
    const open = this.open as Extract<OpenItem, { kind: "reasoning" }>;
    open.text += delta;
    const at = { item_id: open.id, output_index: open.index };
    events.push(this.event("response.reasoning_text.delta", { ...at, content_index: 0, delta }));
    if (this.options.summary) events.push(this.event("response.reasoning_summary_text.delta", { ...at, summary_index: 0, delta }));
    return events;
  }

  private text(delta: string, logprobs: OutputLogprob[]): ResponseStreamEvent[] {
    const events = this.open?.kind === "message" ? [] : this.openMessage();
    const open = this.open as Extract<OpenItem, { kind: "message" }>;
    open.text += delta;
    open.logprobs.push(...logprobs);
    events.push(this.event("response.output_text.delta", { item_id: open.id, output_index: open.index, content_index: 0, delta, logprobs }));
    return events;
  }

  private openMessage(): ResponseStreamEvent[] {
    const events = this.close("completed");
    const open: OpenItem = { kind: "message", index: this.reserve(), id: itemId("msg"), text: "", logprobs: [] };
    this.open = open;
    const item = { type: "message", id: open.id, status: "in_progress", role: "assistant", content: [] };
    events.push(this.event("response.output_item.added", { output_index: open.index, item }));
    events.push(this.event("response.content_part.added", { item_id: open.id, output_index: open.index, content_index: 0, part: this.textPart("", []) }));
    return events;
  }

  private toolCall(chatIndex: number, callId: string | undefined, name: string | undefined, args: string): ResponseStreamEvent[] {
    const events: ResponseStreamEvent[] = [];
    if (callId !== undefined && !(this.open?.kind === "call" && this.open.chatIndex === chatIndex)) {
      events.push(...this.close("completed"));
      const open: OpenItem = { kind: "call", index: this.reserve(), id: itemId("fc"), callId, name: name ?? "", arguments: "", chatIndex };
      this.open = open;
      events.push(this.event("response.output_item.added", { output_index: open.index, item: this.callItem(open, "in_progress") }));
    }
    if (args !== "" && this.open?.kind === "call") {
      this.open.arguments += args;
      events.push(this.event("response.function_call_arguments.delta", { item_id: this.open.id, output_index: this.open.index, delta: args }));
    }
    return events;
  }

  /** The done events of the open item, which takes its place in the output. */
  private close(status: "completed" | "incomplete"): ResponseStreamEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = undefined;
    const at = { item_id: open.id, output_index: open.index };
    const events: ResponseStreamEvent[] = [];
    let item: OutputItem;
    switch (open.kind) {
      case "reasoning": {
        item = reasoningItem(open.id, open.text, this.options.summary, status);
        events.push(this.event("response.reasoning_text.done", { ...at, content_index: 0, text: open.text }));
        events.push(this.event("response.content_part.done", { ...at, content_index: 0, part: { type: "reasoning_text", text: open.text } }));
        if (this.options.summary) {
          events.push(this.event("response.reasoning_summary_text.done", { ...at, summary_index: 0, text: open.text }));
          events.push(this.event("response.reasoning_summary_part.done", { ...at, summary_index: 0, part: { type: "summary_text", text: open.text } }));
        }
        break;
      }
      case "message": {
        const annotations = citationsIn(open.text, this.sources);
        const part = { ...this.textPart(open.text, open.logprobs), annotations };
        item = { type: "message", id: open.id, status, role: "assistant", content: [part] };
        annotations.forEach((annotation, annotation_index) => {
          events.push(this.event("response.output_text.annotation.added", { ...at, content_index: 0, annotation_index, annotation }));
        });
        events.push(this.event("response.output_text.done", { ...at, content_index: 0, text: open.text, logprobs: open.logprobs }));
        events.push(this.event("response.content_part.done", { ...at, content_index: 0, part }));
        break;
      }
      case "call":
        item = this.callItem(open, "completed");
        events.push(this.event("response.function_call_arguments.done", { ...at, name: open.name, arguments: open.arguments }));
        break;
    }
    this.output[open.index] = item;
    events.push(this.event("response.output_item.done", { output_index: open.index, item }));
    return events;
  }

  /** The output index of the item being opened (the previous one is closed and in the output by then). */
  private reserve(): number {
    return this.output.length;
  }

  private textPart(text: string, logprobs: OutputLogprob[]) {
    return { type: "output_text" as const, text, annotations: [], ...(this.options.logprobs ? { logprobs } : {}) };
  }

  private callItem(open: Extract<OpenItem, { kind: "call" }>, status: "in_progress" | "completed"): OutputItem {
    return { type: "function_call", id: open.id, call_id: open.callId, name: open.name, arguments: open.arguments, status };
  }
}
