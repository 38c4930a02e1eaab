import type { Character } from "../../characters/Character.js";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { InvalidRequestError } from "../../errors.js";
import { toJsonSchemaSubset, UnsupportedJsonSchemaError } from "../../engines/jsonSchemaSubset.js";
import { type SchemaCheck, schemaCheck } from "./schemaCheck.js";
import type { ChatFeatures, ChatMessage, PromptCacheOptions, ReasoningOptions, ResponseFormat, SamplingOptions, ToolOptions, UserContentPart } from "../../engines/types.js";
import { readContentPart, type PartContext } from "./contentParts.js";
import { type AppliedServiceParameters, type ChatCompletionRequest, type ChatMessageWire, type ContentPart, MAX_TOP_LOGPROBS, type ReasoningEffort } from "./schema.js";

/**
 * Pure translations from the wire request to the engine's options. Each throws a 400 that
 * names the offending field when the request asks for something the model cannot do.
 */

/**
 * Flattens wire messages to the engine's: parts read to text (documents extracted, audio
 * transcribed, one part at a time so a request holds one decoded file in memory) and joined,
 * developer treated as system.
 */
export async function toEngineMessages(messages: readonly ChatMessageWire[], reading: Omit<PartContext, "path" | "counts">): Promise<ChatMessage[]> {
  const out: ChatMessage[] = [];
  const counts = { images: 0, videos: 0 };
  for (const [index, message] of messages.entries()) {
    /** The message's parts read in order; pictures and video only where the role allows them. */
    const read = async (content: unknown): Promise<{ text: string; parts?: UserContentPart[] }> => {
      if (content == null) return { text: "" };
      if (typeof content === "string") return { text: content };
      const parts: UserContentPart[] = [];
      for (const [partIndex, part] of (content as ContentPart[]).entries()) {
        const path = ["messages", index, "content", partIndex];
        if ((part.type === "image_url" || part.type === "video_url") && message.role !== "user") {
          throw InvalidRequestError.forField([...path, "type"], `${part.type} parts belong in user messages, not in ${message.role} messages`);
        }
        const value = await readContentPart(part, { ...reading, counts, path });
        if (typeof value === "string") parts.push({ type: "text", text: value });
        else parts.push(...[value].flat());
      }
      const text = parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
      return parts.some((p) => p.type !== "text") ? { text, parts } : { text };
    };
    const text = async (content: unknown) => (await read(content)).text;
    switch (message.role) {
      case "system":
      case "developer":
        out.push({ role: "system", content: await text(message.content) });
        break;
      case "user": {
        const { text, parts } = await read(message.content);
        out.push(parts ? { role: "user", content: text, parts } : { role: "user", content: text });
        break;
      }
      case "assistant": {
        const fromDetails = message.reasoning_details?.map((d) => d.text ?? "").join("") || null;
        out.push({
          role: "assistant",
          content: message.content == null ? null : await text(message.content),
          reasoning: message.reasoning_content ?? fromDetails,
          toolCalls: message.tool_calls?.map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments })),
          reasoningDetails: message.reasoning_details ?? undefined,
          thoughtSignature: message.thought_signature ?? undefined,
        });
        break;
      }
      case "tool":
        out.push({ role: "tool", content: await text(message.content), toolCallId: message.tool_call_id });
        break;
    }
  }
  return out;
}

/**
 * The conversation the model sees: the node's default system prompt (unless the caller
 * opts out), the character's persona, the caller's own system prompts, the character's
 * example exchange, then the conversation.
 */
export function assembleConversation(
  caller: ChatMessage[],
  entry: ModelEntry,
  params: AppliedServiceParameters,
  character: Character | undefined,
): { messages: ChatMessage[]; positionOf: (callerIndex: number) => number } {
  const leading: ChatMessage[] = [];
  if (params.include_service_system_prompt && entry.systemPrompt) leading.push({ role: "system", content: entry.systemPrompt });
  if (character) leading.push({ role: "system", content: character.systemPrompt });
  const firstTurn = caller.findIndex((m) => m.role !== "system");
  const split = firstTurn < 0 ? caller.length : firstTurn;
  const examples: ChatMessage[] = (character?.exampleMessages ?? []).map((m) => ({ role: m.role, content: m.content }) as ChatMessage);
  return {
    messages: [...leading, ...caller.slice(0, split), ...examples, ...caller.slice(split)],
    positionOf: (i) => leading.length + i + (i < split ? 0 : examples.length),
  };
}

/** The prompt_cache_key and the last message carrying a cache_control mark (a cache breakpoint). */
export function toPromptCache(request: ChatCompletionRequest, positionOf: (callerIndex: number) => number): PromptCacheOptions {
  let breakpoint: number | undefined;
  request.messages.forEach((message, index) => {
    const marked =
      (message as { cache_control?: unknown }).cache_control !== undefined || (Array.isArray(message.content) && message.content.some((part) => part.cache_control !== undefined));
    if (marked) breakpoint = positionOf(index);
  });
  return { key: request.prompt_cache_key ?? undefined, breakpointMessage: breakpoint };
}

export function toSampling(request: ChatCompletionRequest, entry: ModelEntry, features: ChatFeatures): SamplingOptions {
  const temperature = request.temperature ?? entry.constraints.temperature.default;
  let dynamicTemperature: SamplingOptions["dynamicTemperature"];
  if (request.max_temp != null || request.min_temp != null) {
    const field = request.max_temp != null ? "max_temp" : "min_temp";
    if (!features.dynamicTemperature) throw InvalidRequestError.forField([field], `the model "${entry.id}" does not support dynamic temperature`);
    const min = request.min_temp ?? 0;
    dynamicTemperature = { min, max: request.max_temp ?? Math.max(temperature, min) };
  }
  return {
    temperature,
    topP: request.top_p ?? entry.constraints.top_p.default,
    topK: request.top_k ?? undefined,
    minP: request.min_p ?? undefined,
    seed: request.seed ?? undefined,
    repetitionPenalty: request.repetition_penalty ?? undefined,
    frequencyPenalty: request.frequency_penalty ?? undefined,
    presencePenalty: request.presence_penalty ?? undefined,
    logitBias: toLogitBias(request.logit_bias),
    dynamicTemperature,
  };
}

/**
 * Token ids a request names (stop_token_ids, logit_bias), each with its place in `field`: ids of
 * the model's vocabulary, where the engine tokenizes locally (a relay's upstream checks its own).
 */
export function checkTokenIds(field: string, ids: Iterable<readonly [place: string | number, id: number]>, features: ChatFeatures): void {
  const vocabulary = features.vocabularySize;
  if (vocabulary === 0) return;
  for (const [place, id] of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= vocabulary) {
      throw InvalidRequestError.forField([field, place], `token id ${id} is outside this model's vocabulary (0 to ${vocabulary - 1})`);
    }
  }
}

/** logit_bias's keys as token ids; undefined when it biases nothing. */
export function toLogitBias(bias: Record<string, number> | null | undefined): Map<number, number> | undefined {
  const entries = Object.entries(bias ?? {});
  return entries.length > 0 ? new Map(entries.map(([token, value]) => [Number(token), value])) : undefined;
}

export function toLogprobs(request: ChatCompletionRequest, modelId: string, features: ChatFeatures): { top: number } | undefined {
  if (!request.logprobs) return undefined;
  if (!features.logprobs) throw InvalidRequestError.forField(["logprobs"], `the model "${modelId}" does not report log probabilities`);
  return { top: Math.min(request.top_logprobs ?? 0, MAX_TOP_LOGPROBS) };
}

export function toChoiceCount(request: ChatCompletionRequest, modelId: string, features: ChatFeatures): number {
  const n = request.n ?? 1;
  if (n > features.maxChoices) {
    throw InvalidRequestError.forField(["n"], `the model "${modelId}" generates at most ${features.maxChoices} choices per request (its parallel sequences)`);
  }
  return n;
}

/**
 * The request's functions and tool_choice, checked on their own (names, schemas): done before
 * any paid or slow work. Whether the model can call functions is `requireFunctionCalling`'s.
 */
export function toToolOptions(request: ChatCompletionRequest): ToolOptions | undefined {
  const choice = request.tool_choice ?? undefined;
  const functions: ToolOptions["functions"] = [];
  const seen = new Set<string>();
  (request.tools ?? []).forEach((tool, index) => {
    if (tool.type !== "function") return; // built-in search tools are the search provider's business
    const fn = (tool as { function: { name: string; description?: string; parameters?: Record<string, unknown> } }).function;
    if (seen.has(fn.name)) throw InvalidRequestError.forField(["tools", index, "function", "name"], `the function "${fn.name}" is defined twice`);
    seen.add(fn.name);
    const parametersSchema = fn.parameters ?? { type: "object", properties: {} };
    functions.push({ name: fn.name, description: fn.description, parametersSchema, parameters: schemaSubset(parametersSchema, ["tools", index, "function", "parameters"]) });
  });
  if (functions.length === 0) {
    if (choice === "required" || (typeof choice === "object" && choice !== null)) {
      throw InvalidRequestError.forField(["tool_choice"], "tool_choice asks for a function call but tools defines no functions");
    }
    return undefined;
  }
  let toolChoice: ToolOptions["choice"] = "auto";
  if (typeof choice === "string") toolChoice = choice;
  else if (choice) {
    if (!seen.has(choice.function.name)) {
      throw InvalidRequestError.forField(["tool_choice", "function", "name"], `"${choice.function.name}" is not one of the functions in tools`);
    }
    toolChoice = { name: choice.function.name };
  }
  return { functions, choice: toolChoice, parallel: request.parallel_tool_calls ?? true };
}

export function requireFunctionCalling(tools: ToolOptions | undefined, modelId: string, features: ChatFeatures): ToolOptions | undefined {
  if (tools && tools.choice !== "none" && !features.functionCalling) {
    throw InvalidRequestError.forField(["tools"], `the model "${modelId}" does not support function calling (its chat template has no tool-call syntax)`);
  }
  return tools;
}

/**
 * The requested output format, its schema checked (before any paid or slow work); the model's
 * support is `requireStructuredOutput`'s. Keywords the grammar cannot hold are left to a check
 * of the finished output (`check`), not refused.
 */
export function toResponseFormat(request: ChatCompletionRequest): RequestedFormat | undefined {
  const format = request.response_format;
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  const wrapper = format.json_schema as Record<string, unknown>;
  // The standard nests the schema as {name, schema, strict}; the reference sends the schema itself.
  const nested = typeof wrapper.schema === "object" && wrapper.schema !== null && !Array.isArray(wrapper.schema);
  const schema = nested ? wrapper.schema : wrapper;
  const source = {
    name: nested && typeof wrapper.name === "string" ? wrapper.name : undefined,
    strict: nested && typeof wrapper.strict === "boolean" ? wrapper.strict : undefined,
    schema: schema as Record<string, unknown>,
  };
  const path = ["response_format", "json_schema", ...(nested ? ["schema"] : [])];
  const unenforced = new Set<string>();
  const subset = schemaSubset(schema, path, unenforced);
  const check = unenforced.size > 0 ? schemaCheck(source.schema, [...unenforced].sort(), path) : undefined;
  return { type: "json_schema", schema: subset, source, ...(check ? { check } : {}) };
}

/** The output format a request asked for, with the check after generation its schema needs (if any). */
export type RequestedFormat = { type: "json_object" } | (Extract<ResponseFormat, { type: "json_schema" }> & { check?: SchemaCheck });

/** The format as the engine takes it: the check after generation stays with the service. */
export function engineFormat(format: RequestedFormat | undefined): ResponseFormat | undefined {
  if (format?.type !== "json_schema") return format;
  const { check: _check, ...rest } = format;
  return rest;
}

export function requireStructuredOutput(format: ResponseFormat | undefined, modelId: string, features: ChatFeatures): ResponseFormat | undefined {
  if (format && !features.responseSchema) throw InvalidRequestError.forField(["response_format"], `the model "${modelId}" does not support structured output`);
  return format;
}

function schemaSubset(schema: unknown, path: (string | number)[], unenforced?: Set<string>) {
  try {
    return toJsonSchemaSubset(schema, { unenforced });
  } catch (error) {
    if (error instanceof UnsupportedJsonSchemaError) {
      const where = error.path.length ? ` (at ${error.path.join(".")})` : "";
      throw InvalidRequestError.forField(path, `unsupported JSON schema${where}: ${error.reason}`);
    }
    throw error;
  }
}

/**
 * Effort maps to a share of the completion's token limit the thought block may use before
 * Hearth closes it, so an answer always follows; "none" switches thinking off.
 */
const EFFORT_SHARE: Record<Exclude<ReasoningEffort, "none">, number> = { minimal: 1 / 8, low: 1 / 4, medium: 1 / 2, high: 3 / 4, xhigh: 7 / 8, max: 1 };

export function toReasoning(request: ChatCompletionRequest, params: AppliedServiceParameters): ReasoningOptions {
  const effort = request.reasoning_effort ?? request.reasoning?.effort;
  if (params.disable_thinking || effort === "none") return { mode: "off" };
  if (effort) return { mode: "on", budgetShare: EFFORT_SHARE[effort], effort };
  return { mode: "auto" };
}
