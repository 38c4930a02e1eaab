import { z } from "zod";

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

/** Part kinds the standard defines; which models accept them is decided by the service. */
const OtherPart = z.looseObject({ type: z.enum(["image_url", "input_audio", "video_url", "file"]) });

const ContentPart = z.discriminatedUnion("type", [TextPart, OtherPart]);
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

export const ServiceParameters = z.looseObject({
  character_slug: z.string().optional(),
  strip_thinking_response: z.boolean().default(false),
  disable_thinking: z.boolean().default(false),
  enable_e2ee: z.boolean().default(false),
  enable_web_search: z.enum(["off", "on", "auto"]).default("off"),
  enable_web_scraping: z.boolean().default(false),
  enable_web_citations: z.boolean().default(false),
  enable_x_search: z.boolean().default(false),
  include_search_results_in_stream: z.boolean().default(false),
  return_search_results_as_documents: z.boolean().default(false),
  include_service_system_prompt: z.boolean().default(true),
});
export type ServiceParameters = z.infer<typeof ServiceParameters>;

const Stop = z.union([z.string(), z.array(z.string()).max(16)]).nullish();

const ChatCompletionFields = z.looseObject({
  model: z.string().min(1),
  messages: z.array(ChatMessageWire).min(1, "messages must hold at least one message"),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  top_k: z.number().int().min(0).nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  stop: Stop,
  seed: z.number().int().min(0).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  repetition_penalty: z.number().min(0).nullish(),
  n: z.number().int().min(1).max(1, "n above 1 is not supported yet").nullish(),
  user: z.string().nullish(),
  logprobs: z.literal(false, "logprobs are not supported yet").nullish(),
  tools: z.array(z.unknown()).max(0, "tools are not supported yet").nullish(),
  response_format: z.looseObject({ type: z.literal("text", "only response_format type 'text' is supported yet") }).nullish(),
  service_parameters: ServiceParameters.default(ServiceParameters.parse({})),
});

/** Accepts the provider's spellings as input aliases of the neutral wire names. */
function acceptProviderAliases(input: unknown): unknown {
  if (!input || typeof input !== "object" || Array.isArray(input)) return input;
  const body = { ...(input as Record<string, unknown>) };
  if (body.service_parameters === undefined && body.venice_parameters !== undefined) body.service_parameters = body.venice_parameters;
  delete body.venice_parameters;
  const params = body.service_parameters;
  if (params && typeof params === "object" && !Array.isArray(params)) {
    const copy = { ...(params as Record<string, unknown>) };
    if (copy.include_service_system_prompt === undefined && copy.include_venice_system_prompt !== undefined)
      copy.include_service_system_prompt = copy.include_venice_system_prompt;
    delete copy.include_venice_system_prompt;
    body.service_parameters = copy;
  }
  return body;
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

export const ServiceParametersEcho = z.object({
  enable_e2ee: z.boolean(),
  enable_web_search: z.enum(["auto", "off", "on"]),
  enable_web_citations: z.boolean(),
  enable_web_scraping: z.boolean(),
  include_service_system_prompt: z.boolean(),
  include_search_results_in_stream: z.boolean(),
  return_search_results_as_documents: z.boolean(),
  strip_thinking_response: z.boolean(),
  disable_thinking: z.boolean(),
  character_slug: z.string().optional(),
});
export type ServiceParametersEcho = z.infer<typeof ServiceParametersEcho>;

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
      logprobs: z.null(),
      message: z.object({
        role: z.literal("assistant"),
        content: z.string().nullable(),
        reasoning_content: z.string().nullable(),
        tool_calls: z.array(z.unknown()).nullable(),
      }),
    }),
  ),
  usage: Usage,
  prompt_logprobs: z.null(),
  cost: Cost,
  service_parameters: ServiceParametersEcho,
});
export type ChatCompletionResponse = z.infer<typeof ChatCompletionResponse>;

export const ChatCompletionChunk = z.object({
  id: z.string(),
  object: z.literal("chat.completion.chunk"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      delta: z.object({ role: z.literal("assistant").optional(), content: z.string().optional() }),
      finish_reason: z.enum(["stop", "length", "tool_calls"]).nullable(),
      logprobs: z.null(),
    }),
  ),
  usage: Usage.nullable().optional(),
  cost: Cost.optional(),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;
