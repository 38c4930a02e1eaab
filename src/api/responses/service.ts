import { z } from "zod";
import type { ChatGenerateResult } from "../../engines/types.js";
import { PlanRefusalError } from "../../engines/PlanRefusal.js";
import { ApiError, InvalidRequestError } from "../../errors.js";
import { firstErrorPath } from "../../http/errorFormat.js";
import { DAY_MS } from "../../time.js";
import { deleteStoredResponse, findStoredItem, findStoredResponse, insertStoredResponse, purgeExpiredResponses, type StoredResponse } from "../../store/responses.js";
import type { Db } from "../../store/Store.js";
import type { ChatCall, ChatService, PreparedChat, ResolvedChat } from "../chat/service.js";
import { fromResponsesRequest, toResponsesPath, type MessageOrigin, type TranslatedRequest } from "./fromResponsesRequest.js";
import { itemId } from "./itemId.js";
import { ResponseEvents } from "./responseEvents.js";
import { type InputItemsQuery, type OutputItem, ResponseInputItem, type ResponseObject, type ResponseRequest, type ResponseStreamEvent } from "./schema.js";
import { finishResponse, responseSkeleton, toOutputItems } from "./toResponse.js";

/** A request checked (its stored conversation found) and translated, before any paid work. */
export interface ResolvedResponse {
  request: ResponseRequest;
  accountId: string;
  translated: TranslatedRequest;
  /** The items of the conversation it continues (empty without previous_response_id). */
  context: ResponseInputItem[];
  chat: ResolvedChat;
  /** Oldest items left out to fit the context (truncation: "auto"). */
  dropped: number;
}

export interface PreparedResponse extends ResolvedResponse {
  prepared: PreparedChat;
  skeleton: ResponseObject;
  /** The stream's events (its sequence numbers), also what a failure after the first byte becomes. */
  events: ResponseEvents;
  logprobs: boolean;
  summary: boolean;
}

export interface ResponsesServiceOptions {
  db: Db;
  /** The injected clock (expiry and created_at). */
  now: () => number;
  retentionDays: number;
  searchAvailable: boolean;
}

const StoredItems = z.array(ResponseInputItem);

/** A prompt the model's context cannot hold: the chat path's 400 on `messages`, or the engine's plan refusal. */
function isPromptTooLong(error: unknown): boolean {
  if (error instanceof PlanRefusalError) return error.refusal.kind === "promptTooLong";
  return error instanceof InvalidRequestError && firstErrorPath(error.extra.details) === "messages";
}

/**
 * The conversation less its `count` oldest droppable items: a function call goes with its
 * outputs; system and developer messages and the last input item stay.
 */
function dropOldestItems(context: ResponseInputItem[], input: ResponseInputItem[], count: number): { context: ResponseInputItem[]; input: ResponseInputItem[] } {
  const all = [...context.map((item) => ({ item, fromContext: true })), ...input.map((item) => ({ item, fromContext: false }))];
  const kept = new Set(all);
  const last = all.at(-1);
  for (let i = 0; i < count; i++) {
    const oldest = [...kept].find((entry) => entry !== last && !isInstruction(entry.item));
    if (!oldest) break;
    kept.delete(oldest);
    if (oldest.item.type === "function_call") {
      const callId = oldest.item.call_id;
      for (const entry of kept) if (entry.item.type === "function_call_output" && entry.item.call_id === callId) kept.delete(entry);
    }
  }
  const survivors = all.filter((entry) => kept.has(entry));
  return { context: survivors.filter((e) => e.fromContext).map((e) => e.item), input: survivors.filter((e) => !e.fromContext).map((e) => e.item) };
}

function isInstruction(item: ResponseInputItem): boolean {
  const role = (item as { role?: string }).role;
  return role === "system" || role === "developer";
}

/**
 * The Responses API as a translation in and out of the chat service: the request becomes a
 * chat request (its stored conversation included), the chat answer becomes output items (or
 * the standard's events), and the response is stored for retrieval and continuation. Knows
 * nothing about Express; billing and limits are the chat path's, inside the route's metered().
 */
export class ResponsesService {
  constructor(
    private readonly chat: ChatService,
    private readonly options: ResponsesServiceOptions,
  ) {}

  /** Every check that needs only the request and the store: the route admits (rate limits) between this and `prepare`. */
  resolve(request: ResponseRequest, accountId: string, dropped = 0): ResolvedResponse {
    const fullContext = request.previous_response_id ? this.conversationOf(accountId, request.previous_response_id) : [];
    const fullInput = request.input.map((item, index) => (item.type === "item_reference" ? this.referencedItem(accountId, item.id, index) : item));
    const { context, input } = dropOldestItems(fullContext, fullInput, dropped);
    const translated = fromResponsesRequest({ ...request, input }, { context, searchAvailable: this.options.searchAvailable });
    const chat = withResponsesPaths(translated.origins, () => this.chat.resolve(translated.chat));
    return { request, accountId, translated, context, chat, dropped };
  }

  /**
   * The chat request prepared for the engine. With `truncation: "auto"` a conversation too long
   * for the model's context loses its oldest items (a function call with its outputs, never a
   * system or developer message, never the last input item) until it fits, as the standard
   * does; otherwise it is the chat path's 400.
   */
  async prepare(first: ResolvedResponse, call: ChatCall): Promise<PreparedResponse> {
    let resolved = first;
    let prepared: PreparedChat;
    for (;;) {
      try {
        prepared = await this.chat.prepare(resolved.chat, call);
        // Planning is side-effect free (it renders and measures): here it only tells whether the prompt fits.
        if (resolved.request.truncation === "auto") await prepared.engine.plan(prepared.options);
        break;
      } catch (error) {
        if (resolved.request.truncation === "auto" && isPromptTooLong(error)) {
          const shorter = this.resolve(resolved.request, resolved.accountId, resolved.dropped + 1);
          if (shorter.context.length + shorter.translated.inputItems.length < resolved.context.length + resolved.translated.inputItems.length) {
            resolved = shorter;
            continue;
          }
          throw InvalidRequestError.forField(["input"], "the prompt does not fit this model's context even with every older item left out (truncation: auto)");
        }
        throw toResponsesError(error, resolved.translated.origins);
      }
    }
    const { request } = resolved;
    const unsupported = [
      prepared.headers["x-service-unsupported-parameters"],
      request.max_tool_calls != null ? "max_tool_calls" : undefined,
      request.text?.verbosity != null ? "text.verbosity" : undefined,
    ].filter(Boolean);
    if (unsupported.length > 0) prepared.headers["x-service-unsupported-parameters"] = unsupported.join(",");
    const skeleton = responseSkeleton(request, {
      id: itemId("resp"),
      createdAt: Math.floor(this.options.now() / 1000),
      model: prepared.entry.id,
      store: request.store !== false,
    });
    const logprobs = request.include?.includes("message.output_text.logprobs") === true;
    const summary = request.reasoning?.summary != null;
    return { ...resolved, prepared, skeleton, events: new ResponseEvents(skeleton, { logprobs, summary }), logprobs, summary };
  }

  /** Non-streaming: the chat answer as the response (stored unless `store: false`). */
  async complete(response: PreparedResponse, signal: AbortSignal): Promise<{ response: ResponseObject; result: ChatGenerateResult; headers: Record<string, string> }> {
    const { response: answer, result, headers } = await withResponsesPathsAsync(response.translated.origins, () => this.chat.complete(response.prepared, signal));
    if (result.finishReason === "abort") return { response: { ...response.skeleton, cost: answer.cost }, result, headers };
    const output: OutputItem[] = toOutputItems(answer.choices[0]!, {
      logprobs: response.logprobs,
      summary: response.summary,
      sources: answer.service_parameters.web_search_citations,
      incomplete: result.finishReason === "length",
    });
    const finished = finishResponse(response.skeleton, output, result, answer.cost);
    this.store(response, finished);
    return { response: finished, result, headers };
  }

  /**
   * Streaming: the standard's events as the chat stream's chunks arrive. Nothing is sent before
   * the chat service has planned and the engine started, so its refusals (400, 402, 429) keep
   * their status; the last value returned is the engine result (for metering).
   */
  async *stream(response: PreparedResponse, signal: AbortSignal): AsyncGenerator<ResponseStreamEvent, ChatGenerateResult | undefined> {
    const chunks = this.chat.stream(response.prepared, signal);
    const { events } = response;
    let next = await withResponsesPathsAsync(response.translated.origins, () => chunks.next());
    yield* events.start();
    let cost: ResponseObject["cost"] = { usd: 0, diem: 0 };
    for (; !next.done; next = await chunks.next()) {
      if (next.value.cost) cost = next.value.cost;
      yield* events.fromChunk(next.value);
    }
    const result = next.value;
    // A client that went away has nobody to read a terminal event: chat settled what was produced.
    if (!result || result.finishReason === "abort") return result;
    const finished = events.finish(result, cost);
    // Stored before the terminal event, so a client that reads it can retrieve the response at once.
    this.store(response, finished.response);
    yield* finished.events;
    return result;
  }

  retrieve(accountId: string, id: string): ResponseObject {
    return this.find(accountId, id).response as ResponseObject;
  }

  delete(accountId: string, id: string): { id: string; object: "response"; deleted: true } {
    if (!deleteStoredResponse(this.options.db, accountId, id, this.options.now())) throw responseNotFound(id, []);
    return { id, object: "response", deleted: true };
  }

  /** The response's own input items, a page of them in the standard's list shape. */
  inputItems(accountId: string, id: string, query: InputItemsQuery) {
    const items = this.find(accountId, id).inputItems as { id: string }[];
    const ordered = query.order === "asc" ? items : [...items].reverse();
    let start = 0;
    if (query.after !== undefined) {
      const at = ordered.findIndex((item) => item.id === query.after);
      if (at < 0) throw InvalidRequestError.forField(["after"], `no input item "${query.after}" in this response`);
      start = at + 1;
    }
    const data = ordered.slice(start, start + query.limit);
    return { object: "list" as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + query.limit < ordered.length };
  }

  /** Stores a finished response unless the request said `store: false`; expired rows go at the same time. */
  private store(response: PreparedResponse, finished: ResponseObject): void {
    if (response.request.store === false) return;
    const now = this.options.now();
    const { db } = this.options;
    purgeExpiredResponses(db, now);
    insertStoredResponse(db, {
      id: finished.id,
      accountId: response.accountId,
      model: finished.model,
      previousResponseId: response.request.previous_response_id ?? null,
      contextItems: response.context,
      inputItems: response.translated.inputItems,
      response: finished,
      createdAt: now,
      expiresAt: now + this.options.retentionDays * DAY_MS,
    });
  }

  private find(accountId: string, id: string, path: (string | number)[] = []): StoredResponse {
    const stored = findStoredResponse(this.options.db, accountId, id, this.options.now());
    if (!stored) throw responseNotFound(id, path);
    return stored;
  }

  /** The stored item an `item_reference` names (400 naming it when the caller has none with that id). */
  private referencedItem(accountId: string, id: string, index: number): ResponseInputItem {
    const item = ResponseInputItem.safeParse(findStoredItem(this.options.db, accountId, id, this.options.now()));
    if (!item.success || item.data.type === "item_reference") {
      throw InvalidRequestError.forField(
        ["input", index, "id"],
        `no stored item with id "${id}" (its response was deleted, expired, created with store: false, or belongs to another account)`,
      );
    }
    return item.data;
  }

  /** The items a continuation starts from: the stored response's context, its input and its output. */
  private conversationOf(accountId: string, id: string): ResponseInputItem[] {
    const stored = this.find(accountId, id, ["previous_response_id"]);
    const output = (stored.response.output ?? []) as unknown[];
    return StoredItems.parse([...stored.contextItems, ...stored.inputItems, ...output]);
  }
}

/** 404 for an id the caller has no response under (another account's reads the same), naming the field when one gave it. */
function responseNotFound(id: string, path: (string | number)[]): ApiError {
  const message = `no response with id "${id}" (it does not exist, was deleted, expired, was created with store: false, or belongs to another account)`;
  if (path.length === 0) return new ApiError(404, message);
  return new ApiError(404, `${path.join(".")}: ${message}`, { details: InvalidRequestError.forField(path, message).extra.details });
}

/** A 400 the chat service raised, naming the Responses field its chat field came from. */
function toResponsesError(error: unknown, origins: readonly MessageOrigin[]): unknown {
  if (!(error instanceof InvalidRequestError)) return error;
  const found = firstErrorPath(error.extra.details);
  if (!found) return error;
  const segments = found.split(".");
  let node = error.extra.details as Record<string, unknown>;
  for (const segment of segments) node = node[segment] as Record<string, unknown>;
  const message = (node._errors as string[])[0] ?? error.message;
  return InvalidRequestError.forField(toResponsesPath(segments, origins), message);
}

function withResponsesPaths<T>(origins: readonly MessageOrigin[], run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw toResponsesError(error, origins);
  }
}

async function withResponsesPathsAsync<T>(origins: readonly MessageOrigin[], run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw toResponsesError(error, origins);
  }
}
