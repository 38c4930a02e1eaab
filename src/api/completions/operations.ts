import { defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const completionsApi = defineApiGroup({
  tag: "Chat",
  description: "Legacy text completions of the standard, on the chat models: the prompt is raw text, with no chat template.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/completions",
      operationId: "createCompletion",
      summary: "Create a text completion (legacy)",
      description:
        "The prompt (a string, strings, token ids or lists of token ids; each prompt gets `n` choices, choice `i * n + j` being prompt i's j-th) goes to the model as it is, with no chat template (special tokens it spells are read as those tokens). `suffix` asks for fill-in-the-middle, built from the model's FIM tokens (a 400 naming `suffix` when the model has none). `max_tokens` defaults to 16. `logprobs` (0 to 5) gives the legacy shape `{tokens, token_logprobs, top_logprobs, text_offset}`, with `text_offset` counted in the choice's text. `logit_bias` adds to token logits as in chat; `best_of` above `n` generates that many candidates per prompt and returns the `n` with the highest log probability per token, best first (usage and cost count every candidate; not with `stream`: a 400 naming `best_of`). `stream: true` answers `text_completion` events ending with `data: [DONE]`. Billed, limited and recorded as chat is (usage endpoint `/completions`).",
      access: "paid",
      body: { content: { "application/json": schemas.CompletionRequest } },
      responses: {
        200: {
          description: "The completion, or with `stream: true` its chunks",
          headers: INFERENCE_HEADERS,
          content: {
            "application/json": schemas.CompletionResponse,
            "text/event-stream": {
              sse: schemas.CompletionChunk,
              description: '`data: <CompletionChunk JSON>` events, then `data: [DONE]`. An error after the first event arrives as `data: {"error": ...}` before `[DONE]`.',
            },
          },
        },
      },
      errors: {
        ...INFERENCE_ERRORS,
        502: "The upstream server refused this node or failed",
      },
    },
  ],
});
