import { ACCEPT_ENCODING_HEADER, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

/** What a chat request (and a responses request translated into one) says about the fields it could not fully honour. */
export const CHAT_REQUEST_HEADERS = {
  "x-service-unsupported-parameters":
    "Fields accepted but not honoured on this node, comma-separated (enable_x_search, store, verbosity, prompt_cache_retention, reasoning.summary ...)",
  "x-service-clamped-parameters": "Fields served at this node's bound (top_logprobs=20)",
  "x-service-schema-unenforced":
    "The response_format schema's keywords the grammar could not hold (pattern, format, maximum ...), sorted and comma-separated; the output is checked against them after generation",
  "x-service-schema-valid":
    "Not streaming, with x-service-schema-unenforced: whether each choice's output validates against the schema as sent (true/false per choice, in index order)",
} as const;

export const chatApi = defineApiGroup({
  tag: "Chat",
  description: "Chat completions in the chat-completions standard, with the service's extensions (`service_parameters`, characters, reasoning).",
  schemas,
  operations: [
    {
      method: "post",
      path: "/chat/completions",
      operationId: "createChatCompletion",
      summary: "Create a chat completion",
      description:
        "`stream: true` answers a server-sent event stream of chunks ending with `data: [DONE]`. `service_parameters` is the wire name; `venice_parameters` (and `include_venice_system_prompt` inside it) are accepted as aliases. A model id may carry feature suffixes (`model:disable_thinking=true`). `image_url` and `video_url` parts go to models that see (`GET /models`: `supportsVision`, `supportsVideoInput`); other models answer a 400 naming the part and why.",
      access: "paid",
      headers: ACCEPT_ENCODING_HEADER,
      body: { content: { "application/json": schemas.ChatCompletionRequest } },
      responses: {
        200: {
          description: "The completion, or with `stream: true` its chunks (a stream's cost is in its last chunks' `cost`: the headers are sent before it is known)",
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS, ...CHAT_REQUEST_HEADERS },
          content: {
            "application/json": schemas.ChatCompletionResponse,
            "text/event-stream": {
              sse: schemas.ChatCompletionChunk,
              description: '`data: <ChatCompletionChunk JSON>` events, then `data: [DONE]`. An error after the first event arrives as `data: {"error": ...}` before `[DONE]`.',
            },
          },
        },
      },
      errors: {
        ...INFERENCE_ERRORS,
        413: "A `file`, `input_audio`, `image_url` or `video_url` content part is larger than the node's upload limit, its audio longer than the transcription model accepts, or its picture has more pixels than the vision model takes (`code` PAYLOAD_TOO_LARGE)",
        502: "The web search provider failed (`code` SEARCH_PROVIDER_FAILED), or the upstream chat server refused this node or failed",
      },
    },
  ],
});
