import { InvalidRequestError } from "../../errors.js";
import { ChatCompletionRequest, type ChatMessageWire, type ContentPart } from "../chat/schema.js";
import { itemId } from "./itemId.js";
import type { ResponseContentPart, ResponseInputItem, ResponseRequest } from "./schema.js";
import { WEB_SEARCH_TOOL_TYPES } from "./schema.js";

/**
 * A Responses request as the chat request the chat service runs: instructions, the stored
 * conversation (previous_response_id) and the new input items become chat messages; tools,
 * tool_choice, text.format, reasoning and the sampling fields their chat counterparts. Items
 * the chat wire cannot carry are refused here, naming the Responses field.
 */

/** Where a chat message came from, so a 400 the chat service raises names the Responses field. */
export type MessageOrigin = { field: "instructions" } | { field: "previous_response_id" } | { field: "input"; index: number };

export interface TranslatedRequest {
  chat: ChatCompletionRequest;
  /** This request's input items as stored and listed (GET /responses/{id}/input_items): ids assigned where the caller gave none. */
  inputItems: StoredItem[];
  origins: MessageOrigin[];
}

export type StoredItem = ResponseInputItem & { id: string };

const ID_PREFIX: Record<ResponseInputItem["type"], string> = {
  message: "msg",
  function_call: "fc",
  function_call_output: "fco",
  reasoning: "rs",
  web_search_call: "ws",
  item_reference: "ref",
};

export interface TranslationOptions {
  /** Items of the stored conversation this request continues (earlier inputs and outputs, in order). */
  context: readonly ResponseInputItem[];
  /** Whether this node has a search provider (the web_search tool needs one). */
  searchAvailable: boolean;
}

export function fromResponsesRequest(request: ResponseRequest, options: TranslationOptions): TranslatedRequest {
  const input = request.input;
  const inputItems = input.map((item) => ({ ...item, id: item.id ?? itemId(ID_PREFIX[item.type]) }) as StoredItem);

  const conversation = new ConversationBuilder();
  if (request.instructions) conversation.push({ role: "system", content: request.instructions }, { field: "instructions" });
  for (const item of options.context) conversation.add(item, { field: "previous_response_id" }, ["previous_response_id"]);
  for (const [index, item] of input.entries()) conversation.add(item, { field: "input", index }, ["input", index]);
  const { messages, origins } = conversation.finish();
  if (messages.length === 0) throw InvalidRequestError.forField(["input"], "input holds no message to answer");

  const tools = toChatTools(request, options.searchAvailable);
  const wire = {
    model: request.model,
    messages,
    stream: request.stream ?? false,
    // The stream's last chunk then carries the usage the response reports.
    stream_options: request.stream ? { include_usage: true } : undefined,
    max_completion_tokens: request.max_output_tokens ?? undefined,
    temperature: request.temperature ?? undefined,
    top_p: request.top_p ?? undefined,
    logprobs: request.include?.includes("message.output_text.logprobs") ? true : undefined,
    top_logprobs: request.top_logprobs ?? undefined,
    tools: tools.tools,
    tool_choice: tools.choice,
    parallel_tool_calls: request.parallel_tool_calls ?? undefined,
    response_format: toResponseFormat(request),
    reasoning: request.reasoning?.effort ? { effort: request.reasoning.effort } : undefined,
    user: request.user ?? request.safety_identifier ?? undefined,
    metadata: request.metadata ?? undefined,
    prompt_cache_key: request.prompt_cache_key ?? undefined,
    prompt_cache_retention: request.prompt_cache_retention === "24h" ? "24h" : undefined,
    service_parameters: { ...tools.serviceParameters, ...request.service_parameters },
  };
  const parsed = ChatCompletionRequest.safeParse(wire);
  // Every field was checked by the Responses schema; what is left is content the chat wire refuses (an empty message).
  if (!parsed.success) throw InvalidRequestError.forField(["input"], `the input cannot be given to the model: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return { chat: parsed.data, inputItems, origins };
}

/**
 * Items to chat messages. An assistant turn may arrive as several items (a reasoning item, a
 * message, function calls): they are one assistant message, as the model produced them.
 */
class ConversationBuilder {
  private readonly messages: ChatMessageWire[] = [];
  private readonly origins: MessageOrigin[] = [];
  private readonly callIds = new Set<string>();
  /** A reasoning item waiting for the assistant message it belongs to. */
  private pendingReasoning: string | undefined;

  push(message: ChatMessageWire, origin: MessageOrigin): void {
    this.messages.push(message);
    this.origins.push(origin);
  }

  add(item: ResponseInputItem, origin: MessageOrigin, path: (string | number)[]): void {
    switch (item.type) {
      case "message":
        if (item.role === "assistant") {
          const open = this.openAssistant(origin);
          const text = toPlainText(item.content, path);
          open.content = typeof open.content === "string" && open.content !== "" ? `${open.content}${text}` : text;
        } else this.push({ role: item.role, content: toChatContent(item.content, path) } as ChatMessageWire, origin);
        return;
      case "reasoning": {
        const text = (item.content?.length ? item.content.map((c) => c.text) : item.summary.map((s) => s.text)).join("\n");
        this.pendingReasoning = (this.pendingReasoning ?? "") + text;
        return;
      }
      case "function_call": {
        const open = this.openAssistant(origin, true);
        open.tool_calls = [...(open.tool_calls ?? []), { id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } }];
        this.callIds.add(item.call_id);
        return;
      }
      case "function_call_output":
        if (!this.callIds.has(item.call_id)) {
          throw InvalidRequestError.forField([...path, "call_id"], `no function_call with call_id "${item.call_id}" precedes this output in the conversation`);
        }
        this.push({ role: "tool", tool_call_id: item.call_id, content: typeof item.output === "string" ? item.output : toPlainText(item.output, [...path, "output"]) }, origin);
        return;
      case "web_search_call":
        // Its sources were in that turn's context and answer; the search itself is not a message.
        return;
      case "item_reference":
        // The service replaces references by the items they name before translating.
        throw new Error("an item_reference reached the translation");
    }
  }

  finish(): { messages: ChatMessageWire[]; origins: MessageOrigin[] } {
    return { messages: this.messages, origins: this.origins };
  }

  /** The assistant message the next assistant item joins: the last message when it is the assistant's, else a new one. */
  private openAssistant(origin: MessageOrigin, forCall = false): Extract<ChatMessageWire, { role: "assistant" }> {
    const last = this.messages.at(-1);
    // A message after function calls starts a new turn; calls after a message join it (the model wrote both).
    if (last?.role === "assistant" && this.pendingReasoning === undefined && (forCall || !last.tool_calls?.length)) return last;
    const message: Extract<ChatMessageWire, { role: "assistant" }> = { role: "assistant", content: null };
    if (this.pendingReasoning !== undefined) message.reasoning_content = this.pendingReasoning;
    this.pendingReasoning = undefined;
    this.push(message, origin);
    return message;
  }
}

/** Content parts as chat's: text as text, files as file parts, images as image parts (which chat answers). */
function toChatContent(content: string | ResponseContentPart[], path: (string | number)[]): string | ContentPart[] {
  if (typeof content === "string") return content;
  const parts: ContentPart[] = [];
  content.forEach((part, index) => {
    const at = [...path, "content", index];
    switch (part.type) {
      case "input_text":
      case "output_text":
        // Chat refuses empty text parts; an empty one adds nothing.
        if (part.text !== "") parts.push({ type: "text", text: part.text });
        return;
      case "refusal":
        parts.push({ type: "text", text: part.refusal });
        return;
      case "input_file":
        if (part.file_url !== undefined) throw InvalidRequestError.forField([...at, "file_url"], "this node does not fetch files by URL: send file_data (base64 or a data URL)");
        parts.push({ type: "file", file: { file_data: part.file_data, file_id: part.file_id ?? undefined, filename: part.filename } });
        return;
      case "input_image":
        // A vision model reads it as chat's image_url part (detail included); the rest refuse it as chat does.
        parts.push({ type: "image_url", image_url: { url: part.image_url ?? "", ...(part.detail ? { detail: part.detail } : {}) } } as ContentPart);
        return;
    }
  });
  return parts.length > 0 ? parts : "";
}

/** What an assistant message or a function output said, as text (only text parts belong there). */
function toPlainText(content: string | ResponseContentPart[], path: (string | number)[]): string {
  if (typeof content === "string") return content;
  return content
    .map((part, index) => {
      if (part.type === "input_text" || part.type === "output_text") return part.text;
      if (part.type === "refusal") return part.refusal;
      throw InvalidRequestError.forField([...path, "content", index, "type"], `a ${part.type} part cannot be given here: only text parts`);
    })
    .join("");
}

function toChatTools(request: ResponseRequest, searchAvailable: boolean) {
  const isWebSearch = (type: string) => (WEB_SEARCH_TOOL_TYPES as readonly string[]).includes(type);
  const tools = (request.tools ?? []).map((tool, index) => {
    if (tool.type === "function") {
      const fn = tool as Extract<typeof tool, { type: "function" }>;
      return { type: "function" as const, function: { name: fn.name, description: fn.description ?? undefined, parameters: fn.parameters ?? undefined, strict: fn.strict } };
    }
    if (isWebSearch(tool.type)) {
      if (!searchAvailable) {
        throw InvalidRequestError.forField(["tools", index], `the ${tool.type} tool needs a search provider and this node has none (an operator starts it with --search-url)`);
      }
      // Kept at its index, so chat's errors about tools[i] name the same tool.
      return { type: "web_search" as const };
    }
    throw InvalidRequestError.forField(["tools", index, "type"], `the ${tool.type} tool is not available on this node (function and web_search tools are)`);
  });
  const choice = request.tool_choice;
  const webTool = tools.some((t) => t.type === "web_search");
  // A local model cannot decide to search: the web_search tool searches when the question needs current information (chat's "auto"), always when forced.
  const forcedSearch = webTool && typeof choice === "object" && choice !== null && isWebSearch(choice.type);
  const functionsOnly = tools.some((t) => t.type === "function");
  let chatChoice: unknown;
  if (typeof choice === "string") chatChoice = choice === "required" && !functionsOnly && webTool ? undefined : choice;
  else if (choice?.type === "function") chatChoice = { type: "function", function: { name: (choice as { name: string }).name } };
  const serviceParameters: Record<string, unknown> = {};
  if (webTool) {
    serviceParameters.enable_web_search = forcedSearch || (choice === "required" && !functionsOnly) ? "on" : "auto";
    // Citations become url_citation annotations.
    serviceParameters.enable_web_citations = true;
  }
  return { tools: tools.length > 0 ? tools : undefined, choice: chatChoice, serviceParameters };
}

function toResponseFormat(request: ResponseRequest): unknown {
  const format = request.text?.format;
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  const schemaFormat = format as Extract<typeof format, { type: "json_schema" }>;
  return { type: "json_schema", json_schema: { name: schemaFormat.name ?? "response", schema: schemaFormat.schema, strict: schemaFormat.strict ?? undefined } };
}

/**
 * A chat field path as the Responses field it came from: `messages.3.content.0` becomes the
 * input item (or instructions, or previous_response_id) it was translated from.
 */
export function toResponsesPath(path: readonly string[], origins: readonly MessageOrigin[]): (string | number)[] {
  const [head, ...rest] = path;
  switch (head) {
    case "messages": {
      const origin = origins[Number(rest[0])];
      if (!origin) return ["input"];
      if (origin.field !== "input") return [origin.field];
      return ["input", origin.index, ...rest.slice(1)];
    }
    case "response_format":
      return ["text", "format", ...rest.filter((segment) => segment !== "json_schema")];
    case "max_completion_tokens":
    case "max_tokens":
      return ["max_output_tokens"];
    case "logprobs":
      return ["include"];
    case "reasoning_effort":
      return ["reasoning", "effort"];
    case "tools":
      return ["tools", ...rest.filter((segment) => segment !== "function")];
    case "tool_choice":
      return ["tool_choice", ...rest.filter((segment) => segment !== "function")];
    default:
      return [...path];
  }
}
