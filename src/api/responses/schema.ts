import { z } from "zod";
import { checkJsonShape } from "../../http/jsonShape.js";
import { applyServiceParameterAliases, Cost, ServiceParameters, USER_SCHEMA_SHAPE } from "../chat/schema.js";

/**
 * POST /responses: the Responses standard's request and response, served by translation
 * in and out of the chat service. Unlike chat, a top-level field the standard does not define
 * is a 400 naming it (a misspelt `max_output_tokens` would otherwise be silently ignored);
 * inside items and tools, extra fields pass through as the clients send them.
 */

const CallerSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const violation = checkJsonShape(value, USER_SCHEMA_SHAPE);
  if (violation) ctx.addIssue({ code: "custom", message: `this schema ${violation.message}` });
});

const FunctionName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "function names use letters, digits, '_' and '-' (at most 64)");

const InputText = z.looseObject({ type: z.literal("input_text"), text: z.string() });
/** A document, extracted to text as chat's `file` parts are (file_data: a data URL or bare base64). */
const InputFile = z.looseObject({
  type: z.literal("input_file"),
  file_data: z.string().optional(),
  /** The standard's reference to an uploaded file: this node has no Files API (a 400 names it). */
  file_id: z.string().nullish(),
  file_url: z.string().optional(),
  filename: z.string().max(1024).optional(),
});
/** Answered as chat answers image parts: no model here can see yet. */
const InputImage = z.looseObject({ type: z.literal("input_image"), image_url: z.string().nullish(), file_id: z.string().nullish(), detail: z.string().optional() });
/** An earlier answer passed back in an assistant message. */
const OutputTextPart = z.looseObject({ type: z.literal("output_text"), text: z.string() });
const RefusalPart = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });
const ContentPart = z.discriminatedUnion("type", [InputText, InputFile, InputImage, OutputTextPart, RefusalPart]);
export type ResponseContentPart = z.infer<typeof ContentPart>;

const MessageItem = z.looseObject({
  type: z.literal("message"),
  id: z.string().optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(ContentPart)]),
  status: z.string().optional(),
});
const FunctionCallItem = z.looseObject({
  type: z.literal("function_call"),
  id: z.string().optional(),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
  status: z.string().optional(),
});
const FunctionCallOutputItem = z.looseObject({
  type: z.literal("function_call_output"),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(ContentPart)]),
  status: z.string().nullish(),
});
const SummaryText = z.looseObject({ type: z.literal("summary_text"), text: z.string() });
const ReasoningText = z.looseObject({ type: z.literal("reasoning_text"), text: z.string() });
const ReasoningItem = z.looseObject({
  type: z.literal("reasoning"),
  id: z.string().optional(),
  summary: z.array(SummaryText).default([]),
  content: z.array(ReasoningText).nullish(),
  encrypted_content: z.string().nullish(),
  status: z.string().optional(),
});
/** A search this node ran for an earlier turn, passed back: its sources were already in that turn's answer. */
const WebSearchCallItem = z.looseObject({ type: z.literal("web_search_call"), id: z.string().optional(), status: z.string().optional() });

/** An item of one of the caller's stored responses, by id (the Vercel AI SDK sends earlier output items so). */
const ItemReference = z.looseObject({ type: z.literal("item_reference"), id: z.string().min(1) });

const InputItemFields = z.discriminatedUnion("type", [MessageItem, FunctionCallItem, FunctionCallOutputItem, ReasoningItem, WebSearchCallItem, ItemReference]);
/** The clients send messages without `type` ("easy input messages"): role and content make them messages. */
export const ResponseInputItem = z
  .preprocess((item) => (item && typeof item === "object" && !Array.isArray(item) && !("type" in item) && "role" in item ? { ...item, type: "message" } : item), InputItemFields)
  .describe("An input item; a message may leave out `type` (its role and content make it one).");
export type ResponseInputItem = z.infer<typeof InputItemFields>;

const FunctionTool = z.looseObject({
  type: z.literal("function"),
  name: FunctionName,
  description: z.string().nullish(),
  parameters: CallerSchema.nullish(),
  strict: z.boolean().nullish(),
});
export const WEB_SEARCH_TOOL_TYPES = ["web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11"] as const;
/** Served by the node's search provider, as chat's web search is. */
const WebSearchTool = z.looseObject({ type: z.enum(WEB_SEARCH_TOOL_TYPES) });
/** The standard's other hosted tools (file search, code interpreter, MCP...): no such service here, a 400 names them. */
const OtherTool = z.looseObject({ type: z.string().min(1) });
const Tool = z.union([FunctionTool, WebSearchTool, OtherTool]);
export type ResponseTool = z.infer<typeof Tool>;

const ToolChoice = z.union([
  z.enum(["auto", "none", "required"]),
  z.looseObject({ type: z.literal("function"), name: z.string().min(1) }),
  z.looseObject({ type: z.enum(WEB_SEARCH_TOOL_TYPES) }),
]);

const TextFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    name: z.string().min(1).max(64).optional(),
    description: z.string().optional(),
    schema: CallerSchema,
    strict: z.boolean().nullish(),
  }),
]);

const ReasoningEffort = z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);

/** The `include` values the standard defines; only the output logprobs change what this node answers. */
const Includable = z.enum([
  "message.output_text.logprobs",
  "reasoning.encrypted_content",
  "web_search_call.action.sources",
  "web_search_call.results",
  "message.input_image.image_url",
  "file_search_call.results",
  "code_interpreter_call.outputs",
  "computer_call_output.output.image_url",
]);

const RequestFields = {
  model: z.string().min(1),
  /** A string is the standard's shorthand for one user message (and is stored and listed as that item). */
  input: z
    .preprocess((input) => (typeof input === "string" ? [{ type: "message", role: "user", content: [{ type: "input_text", text: input }] }] : input), z.array(ResponseInputItem))
    .describe("A list of items, or a string: the shorthand for one user message (stored and listed as that message item)."),
  instructions: z.string().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  include: z.array(Includable).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  tool_choice: ToolChoice.nullish(),
  tools: z.array(Tool).max(128).nullish(),
  text: z.looseObject({ format: TextFormat.optional(), verbosity: z.enum(["low", "medium", "high"]).nullish() }).nullish(),
  reasoning: z.looseObject({ effort: ReasoningEffort.nullish(), summary: z.enum(["auto", "concise", "detailed"]).nullish(), generate_summary: z.string().nullish() }).nullish(),
  metadata: z
    .record(z.string().max(64), z.string().max(512))
    .refine((m) => Object.keys(m).length <= 16, "metadata holds at most 16 keys")
    .nullish(),
  user: z.string().max(256).nullish(),
  safety_identifier: z.string().max(256).nullish(),
  prompt_cache_key: z.string().min(1).max(1024).nullish(),
  prompt_cache_retention: z.string().nullish(),
  truncation: z.enum(["auto", "disabled"]).nullish(),
  /** Keep the input and output for GET /responses/{id} and `previous_response_id` (default true): this node's extension. */
  store: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_obfuscation: z.boolean().optional() }).nullish(),
  /** A stored response of the caller's whose conversation this request continues. */
  previous_response_id: z.string().min(1).nullish(),
  /** Accepted as the clients send them; not honoured (named in x-service-unsupported-parameters when set). */
  service_tier: z.string().nullish(),
  background: z.boolean().nullish(),
  max_tool_calls: z.number().int().positive().nullish(),
  service_parameters: ServiceParameters.default({}),
};

/** Fields the standard defines that this node refuses when set (no conversation objects, saved prompts or background runs). */
const REFUSED_FIELDS = ["conversation", "prompt", "context_management"] as const;

/** Accepts the provider's `venice_parameters` as the alias of `service_parameters`, as chat does. */
function acceptProviderAliases(input: unknown): unknown {
  if (!input || typeof input !== "object" || Array.isArray(input)) return input;
  const body = { ...(input as Record<string, unknown>) };
  applyServiceParameterAliases(body);
  return body;
}

const ResponseRequestFields = z.looseObject(RequestFields).superRefine((body, ctx) => {
  for (const key of Object.keys(body)) {
    if (key in RequestFields) continue;
    const refused = (REFUSED_FIELDS as readonly string[]).includes(key);
    if (refused && (body as Record<string, unknown>)[key] == null) continue;
    ctx.addIssue({
      code: "custom",
      path: [key],
      message: refused ? `${key} is not supported on this node (use previous_response_id to continue a conversation)` : `unknown field "${key}"`,
    });
  }
  if (body.top_logprobs != null && body.top_logprobs > 0 && !body.include?.includes("message.output_text.logprobs")) {
    ctx.addIssue({ code: "custom", path: ["top_logprobs"], message: 'top_logprobs needs include: ["message.output_text.logprobs"]' });
  }
  if (body.background === true) ctx.addIssue({ code: "custom", path: ["background"], message: "background responses are not supported on this node" });
});

export const ResponseRequest = z.preprocess(acceptProviderAliases, ResponseRequestFields);
export type ResponseRequest = z.infer<typeof ResponseRequestFields>;

// ---- The response ----

export const UrlCitation = z.object({ type: z.literal("url_citation"), url: z.string(), title: z.string(), start_index: z.number().int(), end_index: z.number().int() });
export type UrlCitation = z.infer<typeof UrlCitation>;

const TopLogprob = z.object({ token: z.string(), logprob: z.number(), bytes: z.array(z.number()).nullable() });
export const OutputLogprob = TopLogprob.extend({ top_logprobs: z.array(TopLogprob) });
export type OutputLogprob = z.infer<typeof OutputLogprob>;

export const OutputText = z.object({ type: z.literal("output_text"), text: z.string(), annotations: z.array(UrlCitation), logprobs: z.array(OutputLogprob).optional() });
export type OutputText = z.infer<typeof OutputText>;

const ItemStatus = z.enum(["in_progress", "completed", "incomplete"]);

export const OutputMessage = z.object({ type: z.literal("message"), id: z.string(), status: ItemStatus, role: z.literal("assistant"), content: z.array(OutputText) });
export const FunctionCallOutput = z.object({
  type: z.literal("function_call"),
  id: z.string(),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
  status: ItemStatus,
});
/** The thought: the standard's `content` of `reasoning_text`; `summary` holds it too when `reasoning.summary` asks. */
export const ReasoningOutput = z.object({
  type: z.literal("reasoning"),
  id: z.string(),
  summary: z.array(z.object({ type: z.literal("summary_text"), text: z.string() })),
  content: z.array(z.object({ type: z.literal("reasoning_text"), text: z.string() })),
  status: ItemStatus,
});
export const WebSearchCallOutput = z.object({
  type: z.literal("web_search_call"),
  id: z.string(),
  status: z.literal("completed"),
  action: z.object({ type: z.literal("search"), query: z.string(), sources: z.array(z.object({ type: z.literal("url"), url: z.string() })) }),
});
export const OutputItem = z.discriminatedUnion("type", [ReasoningOutput, OutputMessage, FunctionCallOutput, WebSearchCallOutput]);
export type OutputItem = z.infer<typeof OutputItem>;

export const ResponseUsage = z.object({
  input_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int() }),
  output_tokens: z.number().int(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
  total_tokens: z.number().int(),
});
export type ResponseUsage = z.infer<typeof ResponseUsage>;

export const ResponseObject = z.object({
  id: z.string(),
  object: z.literal("response"),
  created_at: z.number().int(),
  status: z.enum(["completed", "incomplete", "failed", "in_progress"]),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  incomplete_details: z.object({ reason: z.enum(["max_output_tokens", "content_filter"]) }).nullable(),
  model: z.string(),
  output: z.array(OutputItem),
  /** The text of every output_text part, joined (the clients' convenience field). */
  output_text: z.string(),
  instructions: z.string().nullable(),
  max_output_tokens: z.number().int().nullable(),
  metadata: z.record(z.string(), z.string()),
  parallel_tool_calls: z.boolean(),
  previous_response_id: z.string().nullable(),
  reasoning: z.object({ effort: z.string().nullable(), summary: z.string().nullable() }),
  store: z.boolean(),
  temperature: z.number().nullable(),
  text: z.object({ format: z.record(z.string(), z.unknown()) }),
  tool_choice: z.union([z.string(), z.record(z.string(), z.unknown())]),
  tools: z.array(z.record(z.string(), z.unknown())),
  top_logprobs: z.number().int().nullable(),
  top_p: z.number().nullable(),
  truncation: z.enum(["auto", "disabled"]),
  user: z.string().nullable(),
  safety_identifier: z.string().nullable(),
  prompt_cache_key: z.string().nullable(),
  /** Absent until the response is finished (the stream's first events). */
  usage: ResponseUsage.nullable(),
  /** What the request was charged (zero until it is finished). */
  cost: Cost,
});
export type ResponseObject = z.infer<typeof ResponseObject>;

/** One server-sent event: its `type` (also the SSE `event:` name) and a sequence number increasing by one from 0. */
export const ResponseStreamEvent = z.looseObject({ type: z.string(), sequence_number: z.number().int() });
export type ResponseStreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;

// ---- Stored responses (this node's extension) ----

export const ResponseIdParams = z.object({ id: z.string().min(1) });

export const InputItemsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(["asc", "desc"]).default("desc"),
  after: z.string().min(1).optional(),
  include: z.union([z.string(), z.array(z.string())]).optional(),
});
export type InputItemsQuery = z.infer<typeof InputItemsQuery>;

/** A stored input item: as the request gave it, with the id this node assigned when it had none. */
export const StoredInputItem = z.looseObject({ id: z.string(), type: z.string() });

export const InputItemList = z.object({
  object: z.literal("list"),
  data: z.array(StoredInputItem),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

export const DeletedResponse = z.object({ id: z.string(), object: z.literal("response"), deleted: z.literal(true) });
