import type { ChatFeatures, ChatGenerateOptions, ChatMessage, ToolChoice } from "../types.js";

/**
 * The engine's options back into a chat-completions request for an upstream server. Only
 * what the request set is sent (hosted providers reject parameters they do not know), and
 * the answer is always streamed: tokens pass through as they come, a client that goes away
 * stops the upstream at once, and the final chunk carries the usage that settles the bill.
 */
export function toUpstreamRequest(options: ChatGenerateOptions, model: string, features: ChatFeatures): Record<string, unknown> {
  const { sampling, tools, responseFormat, reasoning } = options;
  const body: Record<string, unknown> = {
    model,
    messages: options.messages.map(toWireMessage),
    stream: true,
    stream_options: { include_usage: true },
    temperature: sampling.temperature,
  };
  putSamplingFields(body, options.maxTokens, sampling);
  if (sampling.dynamicTemperature) {
    body.min_temp = sampling.dynamicTemperature.min;
    body.max_temp = sampling.dynamicTemperature.max;
  }
  if (options.stop?.length) body.stop = options.stop;
  if (options.stopTokenIds?.length) body.stop_token_ids = options.stopTokenIds;
  if ((options.choices ?? 1) > 1) body.n = options.choices;
  if (options.logprobs) {
    body.logprobs = true;
    if (options.logprobs.top > 0) body.top_logprobs = options.logprobs.top;
  }
  if (tools && tools.functions.length > 0) {
    body.tools = tools.functions.map((f) => ({
      type: "function",
      function: { name: f.name, ...(f.description !== undefined ? { description: f.description } : {}), parameters: f.parametersSchema },
    }));
    body.tool_choice = toWireToolChoice(tools.choice);
    if (!tools.parallel) body.parallel_tool_calls = false;
  }
  if (responseFormat?.type === "json_object") body.response_format = { type: "json_object" };
  else if (responseFormat?.type === "json_schema") {
    const source = responseFormat.source;
    body.response_format = {
      type: "json_schema",
      json_schema: { name: source?.name ?? "response", ...(source?.strict !== undefined ? { strict: source.strict } : {}), schema: source?.schema ?? {} },
    };
  }
  // Thinking is only steered where the upstream model is configured to think.
  if (features.reasoning && reasoning && reasoning.mode !== "auto") {
    if (reasoning.mode === "off") {
      if (features.reasoningToggle) body.reasoning_effort = "none";
    } else body.reasoning_effort = reasoning.effort ?? "medium";
  }
  if (options.cache?.key !== undefined) body.prompt_cache_key = options.cache.key;
  return body;
}

function toWireMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case "system":
      return { role: message.role, content: message.content };
    case "user":
      // Pictures and video go as the caller wrote them, between the parts read to text here.
      if (message.parts) return { role: "user", content: message.parts.map((part) => (part.type === "text" ? { type: "text", text: part.text } : part.source)) };
      return { role: message.role, content: message.content };
    case "assistant":
      return {
        role: "assistant",
        content: message.content,
        ...(message.reasoning ? { reasoning_content: message.reasoning } : {}),
        ...(message.toolCalls?.length
          ? { tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })) }
          : {}),
      };
    case "tool":
      return { role: "tool", content: message.content, tool_call_id: message.toolCallId };
  }
}

function toWireToolChoice(choice: ToolChoice): unknown {
  return typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
}

/**
 * An upper bound on the prompt's tokens at the upstream, without its tokenizer: byte-level
 * tokenizers never make more tokens than UTF-8 bytes, the JSON framing of each message
 * outweighs the template's per-message tokens, and a fixed allowance covers what a template
 * adds once (a preamble, tool-use instructions).
 */
export function promptTokenBound(body: Record<string, unknown>): number {
  let media = 0;
  const messages = (body.messages as { content?: unknown }[]).map((message) => {
    if (!Array.isArray(message.content)) return message;
    const content = message.content.filter((part: { type?: unknown }) => part.type === "text");
    media += message.content.length - content.length;
    return { ...message, content };
  });
  const shown = JSON.stringify([messages, body.tools ?? null, body.response_format ?? null]);
  return Buffer.byteLength(shown, "utf8") + TEMPLATE_ALLOWANCE + media * MEDIA_PART_ALLOWANCE;
}

const TEMPLATE_ALLOWANCE = 512;
/**
 * Tokens a picture or video part is held at: its bytes say nothing of what the upstream's
 * processor makes of it (a tiled high-detail picture takes a few thousand); the upstream's usage settles it.
 */
const MEDIA_PART_ALLOWANCE = 8192;

/** A typical count (about four bytes a token), for billing when the upstream reports no usage. */
export function promptTokenEstimate(body: Record<string, unknown>): number {
  let bytes = 0;
  let media = 0;
  for (const message of body.messages as { content?: unknown }[]) {
    const parts: { type?: unknown; text?: unknown }[] = Array.isArray(message.content) ? message.content : [{ type: "text", text: message.content }];
    for (const part of parts) {
      if (part.type === "text") bytes += typeof part.text === "string" ? Buffer.byteLength(part.text, "utf8") : 0;
      else media++;
    }
    bytes += 16;
  }
  if (body.tools) bytes += Buffer.byteLength(JSON.stringify(body.tools), "utf8");
  return Math.ceil(bytes / 4) + media * MEDIA_PART_ESTIMATE;
}

/** A typical picture's tokens (a few tiles of a SmolVLM or Qwen-VL), for billing when the upstream reports no usage. */
const MEDIA_PART_ESTIMATE = 1024;

/** The length and sampling fields a request set, under the standard's names (unset ones stay out: hosted providers reject what they do not know). */
export function putSamplingFields(body: Record<string, unknown>, maxTokens: number | undefined, sampling: ChatGenerateOptions["sampling"]): void {
  const set = (key: string, value: unknown) => {
    if (value !== undefined) body[key] = value;
  };
  set("max_tokens", maxTokens);
  set("top_p", sampling.topP);
  set("top_k", sampling.topK);
  set("min_p", sampling.minP);
  set("seed", sampling.seed);
  set("repetition_penalty", sampling.repetitionPenalty);
  set("frequency_penalty", sampling.frequencyPenalty);
  set("presence_penalty", sampling.presencePenalty);
  if (sampling.logitBias?.size) body.logit_bias = Object.fromEntries(sampling.logitBias);
}
