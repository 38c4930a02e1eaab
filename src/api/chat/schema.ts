import { z } from "zod";
import { checkJsonShape, type JsonShapeLimits } from "../../http/jsonShape.js";

/**
 * POST /chat/completions: the request and response shapes of the chat-completions
 * standard with the service's extensions. Undocumented request fields pass through
 * unvalidated (looseObject), as the API brief says.
 */

const CacheControl = z.strictObject({ type: z.literal("ephemeral"), ttl: z.string().optional() });

const TextPart = z.looseObject({
  type: z.literal("text"),
  text: z.string().min(1),
  cache_control: CacheControl.optional(),
});

/** A document, extracted to text before the model sees it (file_data: a data URL or bare base64). */
const FilePart = z.looseObject({
  type: z.literal("file"),
  file: z.looseObject({
    file_data: z.string().optional(),
    /** The standard's reference to an uploaded file: this node has no Files API (a 400 names it). */
    file_id: z.string().optional(),
    filename: z.string().max(1024).optional(),
  }),
  cache_control: CacheControl.optional(),
});

/** The reference's audio formats; raw pcm16/pcm24 are mono little-endian at 24 kHz. */
export const INPUT_AUDIO_FORMATS = ["wav", "mp3", "aiff", "aac", "ogg", "flac", "m4a", "pcm16", "pcm24"] as const;

/** Audio, transcribed by the node's speech-to-text model before the model sees it. */
const AudioPart = z.looseObject({
  type: z.literal("input_audio"),
  input_audio: z.looseObject({ data: z.string(), format: z.enum(INPUT_AUDIO_FORMATS).default("wav") }),
  cache_control: CacheControl.optional(),
});

/**
 * A picture: a data URL (PNG, JPEG, WebP, GIF's first frame) or an http(s) URL the node fetches
 * where the operator allows it (--web-scraping on). Models that cannot see answer a 400 naming
 * the part; upstreams that declare vision get the part unchanged.
 */
const ImagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({ url: z.string().min(1), detail: z.enum(["auto", "low", "high"]).optional() }).optional(),
  cache_control: CacheControl.optional(),
});

/** A video, sampled to frames for models that take video (data URL or, opted in, an http(s) URL). */
const VideoPart = z.looseObject({
  type: z.literal("video_url"),
  video_url: z.looseObject({ url: z.string().min(1) }).optional(),
  cache_control: CacheControl.optional(),
});

const ContentPart = z.discriminatedUnion("type", [TextPart, FilePart, AudioPart, ImagePart, VideoPart]);
export type ContentPart = z.infer<typeof ContentPart>;
const Content = z.union([z.string(), z.array(ContentPart).min(1)]);

const ToolCallWire = z.looseObject({
  id: z.string(),
  type: z.literal("function").default("function"),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

const ReasoningDetail = z.looseObject({
  type: z.string(),
  data: z.string().optional(),
  format: z.string().optional(),
  id: z.string().optional(),
  index: z.number().optional(),
  text: z.string().optional(),
});

export const ChatMessageWire = z.discriminatedUnion("role", [
  z.looseObject({ role: z.literal("system"), content: Content, name: z.string().optional() }),
  z.looseObject({ role: z.literal("developer"), content: Content, name: z.string().optional() }),
  z.looseObject({ role: z.literal("user"), content: Content, name: z.string().optional() }),
  z.looseObject({
    role: z.literal("assistant"),
    content: Content.nullish(),
    name: z.string().nullish(),
    reasoning_content: z.string().nullish(),
    reasoning_details: z.array(ReasoningDetail).nullish(),
    thought_signature: z.string().nullish(),
    tool_calls: z.array(ToolCallWire).nullish(),
  }),
  z.looseObject({ role: z.literal("tool"), content: Content, tool_call_id: z.string().min(1), name: z.string().nullish() }),
]);
export type ChatMessageWire = z.infer<typeof ChatMessageWire>;

/**
 * service_parameters as sent: no defaults here, because a model feature suffix fills in
 * what the body leaves out; SERVICE_PARAMETER_DEFAULTS completes the rest.
 */
export const ServiceParameters = z.looseObject({
  character_slug: z.string().min(1).optional(),
  strip_thinking_response: z.boolean().optional(),
  disable_thinking: z.boolean().optional(),
  enable_e2ee: z.boolean().optional(),
  enable_web_search: z.enum(["off", "on", "auto"]).optional(),
  enable_web_scraping: z.boolean().optional(),
  enable_web_citations: z.boolean().optional(),
  enable_x_search: z.boolean().optional(),
  include_search_results_in_stream: z.boolean().optional(),
  return_search_results_as_documents: z.boolean().optional(),
  include_service_system_prompt: z.boolean().optional(),
});
export type ServiceParameters = z.infer<typeof ServiceParameters>;

export const SERVICE_PARAMETER_DEFAULTS = {
  strip_thinking_response: false,
  disable_thinking: false,
  enable_e2ee: false,
  enable_web_search: "off",
  enable_web_scraping: false,
  enable_web_citations: false,
  enable_x_search: false,
  include_search_results_in_stream: false,
  return_search_results_as_documents: false,
  include_service_system_prompt: true,
} as const satisfies ServiceParameters;
/** service_parameters once the suffix and the defaults are applied. */
export type AppliedServiceParameters = {
  -readonly [K in keyof typeof SERVICE_PARAMETER_DEFAULTS]-?: NonNullable<ServiceParameters[K]>;
} & { character_slug?: string };

const Stop = z.union([z.string(), z.array(z.string()).max(16)]).nullish();

/**
 * A JSON schema from the caller (tool parameters, a response format): bounded in nesting,
 * values and characters, measured without recursion before anything compiles it to a grammar.
 */
export const USER_SCHEMA_SHAPE: JsonShapeLimits = { maxDepth: 64, maxNodes: 2_000, maxChars: 50_000 };
const UserSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const violation = checkJsonShape(value, USER_SCHEMA_SHAPE);
  if (violation) ctx.addIssue({ code: "custom", message: `this schema ${violation.message}` });
});

/** The standard's function names: letters, digits, underscores and dashes, up to 64. */
const FunctionName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "function names use letters, digits, '_' and '-' (at most 64)");

const FunctionTool = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({
    name: FunctionName,
    description: z.string().optional(),
    parameters: UserSchema.optional(),
    strict: z.boolean().nullish(),
  }),
});
/** The provider's built-in search tools; web search is wired up with the search provider. */
const BuiltInTool = z.looseObject({ type: z.enum(["web_search", "x_search"]) });
const Tool = z.union([FunctionTool, BuiltInTool]);

const ToolChoice = z.union([z.enum(["auto", "none", "required"]), z.looseObject({ type: z.literal("function").optional(), function: z.looseObject({ name: z.string().min(1) }) })]);

const ResponseFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  // The reference puts the schema itself here; the standard nests it as {name, schema, strict}. Both are accepted.
  z.looseObject({ type: z.literal("json_schema"), json_schema: UserSchema }),
]);

const ReasoningEffort = z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]);
export type ReasoningEffort = z.infer<typeof ReasoningEffort>;

const MAX_LOGIT_BIAS_TOKENS = 1024;
/** The standard's logit_bias: token ids (as the object's keys) to a value added to the token's logit, -100 (a ban) to 100. */
export const LogitBias = z
  .record(z.string().regex(/^\d{1,10}$/, "logit_bias keys are token ids"), z.number().min(-100).max(100))
  .refine((bias) => Object.keys(bias).length <= MAX_LOGIT_BIAS_TOKENS, `logit_bias holds at most ${MAX_LOGIT_BIAS_TOKENS} tokens`)
  .nullish();

const ChatCompletionFields = z
  .looseObject({
    /** Optional only when a character supplies the model. */
    model: z.string().min(1).optional(),
    messages: z.array(ChatMessageWire).min(1, "messages must hold at least one message"),
    stream: z.boolean().nullish(),
    stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
    max_completion_tokens: z.number().int().positive().nullish(),
    max_tokens: z.number().int().positive().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    max_temp: z.number().min(0).max(2).nullish(),
    min_temp: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    top_k: z.number().int().min(0).nullish(),
    min_p: z.number().min(0).max(1).nullish(),
    stop: Stop,
    stop_token_ids: z.array(z.number().int().min(0)).max(64).nullish(),
    seed: z.number().int().min(0).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    repetition_penalty: z.number().min(0).nullish(),
    logit_bias: LogitBias,
    n: z.number().int().min(1).max(128).nullish(),
    /** The caller's end user and labels: kept on the request's usage row (GET /billing/usage shows them). */
    user: z.string().max(256).nullish(),
    metadata: z
      .record(z.string().max(64), z.string().max(512))
      .refine((m) => Object.keys(m).length <= 16, "metadata holds at most 16 keys")
      .nullish(),
    /** Accepted; not honoured (named in x-service-unsupported-parameters): completions are not stored, verbosity is the model's own. */
    store: z.boolean().nullish(),
    verbosity: z.enum(["low", "medium", "high"]).nullish(),
    /** The standard's output kinds: "audio" is refused below (the models here answer in text). */
    modalities: z
      .array(z.enum(["text", "audio"]))
      .max(2)
      .nullish(),
    /** The standard's audio output settings: only meaningful with modalities ["audio"], which is refused. */
    audio: z.looseObject({ voice: z.union([z.string(), z.looseObject({})]).optional(), format: z.string().optional() }).nullish(),
    logprobs: z.boolean().nullish(),
    /** Above MAX_TOP_LOGPROBS it is served as that many, and the response says so (x-service-clamped-parameters). */
    top_logprobs: z.number().int().min(0).nullish(),
    tools: z.array(Tool).max(128).nullish(),
    tool_choice: ToolChoice.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    response_format: ResponseFormat.nullish(),
    reasoning_effort: ReasoningEffort.nullish(),
    reasoning: z.looseObject({ effort: ReasoningEffort.optional(), summary: z.enum(["auto", "concise", "detailed"]).optional() }).nullish(),
    prompt_cache_key: z.string().min(1).max(1024).nullish(),
    prompt_cache_retention: z.enum(["default", "extended", "24h"]).nullish(),
    service_parameters: ServiceParameters.default({}),
  })
  .superRefine((body, ctx) => {
    if (body.model === undefined && body.service_parameters.character_slug === undefined) {
      ctx.addIssue({ code: "custom", path: ["model"], message: "model is required (it may be left out only when service_parameters.character_slug names a character)" });
    }
    if (body.top_logprobs != null && body.top_logprobs > 0 && body.logprobs !== true) {
      ctx.addIssue({ code: "custom", path: ["top_logprobs"], message: "top_logprobs needs logprobs: true" });
    }
    if (body.modalities?.includes("audio")) {
      // What the standard answers for a model without audio output, rather than a reply without the audio asked for.
      ctx.addIssue({
        code: "custom",
        path: ["modalities"],
        message: "this node's chat models answer in text only: audio output is not available (send the answer to POST /audio/speech to hear it)",
      });
    }
    if (body.min_temp != null && body.max_temp != null && body.min_temp > body.max_temp) {
      ctx.addIssue({ code: "custom", path: ["min_temp"], message: "min_temp is above max_temp" });
    }
  });

/** The most alternatives per token a response lists; a larger top_logprobs is served as this many. */
export const MAX_TOP_LOGPROBS = 20;

/**
 * Accepts the provider's spellings as input aliases of the neutral wire names, and the forms
 * its document allows that the standard does not: `max_tokens` of 0 or less (ignored: the
 * model's default applies), a `tools[]` item without `type` (a function), and `tool_choice`
 * naming a function as a plain string.
 */
function acceptProviderAliases(input: unknown): unknown {
  if (!input || typeof input !== "object" || Array.isArray(input)) return input;
  const body = { ...(input as Record<string, unknown>) };
  if (typeof body.max_tokens === "number" && Number.isInteger(body.max_tokens) && body.max_tokens <= 0) delete body.max_tokens;
  if (Array.isArray(body.tools)) {
    body.tools = body.tools.map((tool: unknown) =>
      tool && typeof tool === "object" && !Array.isArray(tool) && !("type" in tool) && "function" in tool ? { type: "function", ...tool } : tool,
    );
  }
  if (typeof body.tool_choice === "string" && !["auto", "none", "required"].includes(body.tool_choice)) {
    body.tool_choice = { type: "function", function: { name: body.tool_choice } };
  }
  applyServiceParameterAliases(body);
  return body;
}

/** The provider's spellings (venice_parameters, include_venice_system_prompt) as aliases of the neutral names, on a body the caller owns. */
export function applyServiceParameterAliases(body: Record<string, unknown>): void {
  if (body.service_parameters === undefined && body.venice_parameters !== undefined) body.service_parameters = body.venice_parameters;
  delete body.venice_parameters;
  const params = body.service_parameters;
  if (params && typeof params === "object" && !Array.isArray(params)) {
    const copy = { ...(params as Record<string, unknown>) };
    if (copy.include_service_system_prompt === undefined && copy.include_venice_system_prompt !== undefined) copy.include_service_system_prompt = copy.include_venice_system_prompt;
    delete copy.include_venice_system_prompt;
    body.service_parameters = copy;
  }
}

export const ChatCompletionRequest = z.preprocess(acceptProviderAliases, ChatCompletionFields);
export type ChatCompletionRequest = z.infer<typeof ChatCompletionFields>;

/** What the request was charged: USD (bundled credits included, as USD-equivalent) and DIEM. */
export const Cost = z.object({ usd: z.number().min(0), diem: z.number().min(0) });

export const Usage = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int(), cache_creation_input_tokens: z.number().int().optional() }).nullish(),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().int() }).nullish(),
});
export type Usage = z.infer<typeof Usage>;

/** A source the answer may cite (the reference's web_search_citations entry); `[REF]i[/REF]` cites entry i. */
export const WebSearchCitation = z.object({ title: z.string(), url: z.string(), content: z.string().optional(), date: z.string().optional() });
export type WebSearchCitation = z.infer<typeof WebSearchCitation>;

export const ServiceParametersEcho = z.object({
  enable_e2ee: z.boolean(),
  enable_web_search: z.enum(["auto", "off", "on"]),
  enable_web_citations: z.boolean(),
  enable_web_scraping: z.boolean(),
  enable_x_search: z.boolean(),
  include_service_system_prompt: z.boolean(),
  include_search_results_in_stream: z.boolean(),
  return_search_results_as_documents: z.boolean(),
  strip_thinking_response: z.boolean(),
  disable_thinking: z.boolean(),
  character_slug: z.string().optional(),
  /** Present when a web search or scrape ran: the sources the model was given, in the order it numbers them. */
  web_search_citations: z.array(WebSearchCitation).optional(),
});
export type ServiceParametersEcho = z.infer<typeof ServiceParametersEcho>;

const TopLogprobWire = z.object({ token: z.string(), logprob: z.number(), bytes: z.array(z.number()).nullable() });
const TokenLogprobWire = TopLogprobWire.extend({ top_logprobs: z.array(TopLogprobWire) });
export type TokenLogprobWire = z.infer<typeof TokenLogprobWire>;

/**
 * A choice's log probabilities in both shapes clients read: the standard's `content` list
 * (one entry per token, what the openai client types and reassembles), and the reference's
 * flat record, which here sums up the tokens in `content`: their text, their joint log
 * probability, their bytes, and the alternatives when `content` holds a single token (as a
 * stream chunk usually does).
 */
export const ChoiceLogprobs = z.object({
  content: z.array(TokenLogprobWire),
  refusal: z.null(),
  token: z.string(),
  logprob: z.number(),
  bytes: z.array(z.number()),
  top_logprobs: z.array(TopLogprobWire),
});
export type ChoiceLogprobs = z.infer<typeof ChoiceLogprobs>;

const ToolCallOut = z.object({
  id: z.string(),
  type: z.literal("function"),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

export const ChatCompletionResponse = z.object({
  id: z.string(),
  object: z.literal("chat.completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      finish_reason: z.enum(["stop", "length", "tool_calls"]),
      stop_reason: z.enum(["stop", "length"]).nullable(),
      logprobs: ChoiceLogprobs.nullable(),
      message: z.object({
        role: z.literal("assistant"),
        content: z.string().nullable(),
        reasoning_content: z.string().nullable(),
        tool_calls: z.array(ToolCallOut).nullable(),
      }),
    }),
  ),
  usage: Usage,
  prompt_logprobs: z.null(),
  cost: Cost,
  service_parameters: ServiceParametersEcho,
});
export type ChatCompletionResponse = z.infer<typeof ChatCompletionResponse>;

const ToolCallDelta = z.object({
  index: z.number().int(),
  id: z.string().optional(),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string().optional(), arguments: z.string() }),
});

export const ChatCompletionChunk = z.object({
  id: z.string(),
  object: z.literal("chat.completion.chunk"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      delta: z.object({
        role: z.literal("assistant").optional(),
        content: z.string().optional(),
        reasoning_content: z.string().optional(),
        tool_calls: z.array(ToolCallDelta).optional(),
      }),
      finish_reason: z.enum(["stop", "length", "tool_calls"]).nullable(),
      logprobs: ChoiceLogprobs.nullable(),
    }),
  ),
  usage: Usage.nullable().optional(),
  cost: Cost.optional(),
  /** The role chunk opening the answer carries the applied settings (with the citations) when web sources were used. */
  service_parameters: ServiceParametersEcho.optional(),
  /** include_search_results_in_stream: the first chunk emitted (no choices) carries the sources. */
  service_search_results: z.array(WebSearchCitation).optional(),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;
