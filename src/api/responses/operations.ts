import { ACCOUNT_RATE_LIMIT_HEADERS } from "../billing/operations.js";
import { CHAT_REQUEST_HEADERS } from "../chat/operations.js";
import { COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

const STORAGE_NOTE =
  "Stored responses are this node's extension: the provider documents its endpoint as stateless. A response is stored (the default, `store: false` keeps nothing) for `--responses-retention-days` (default 30) and only its account can read, continue or delete it; another account's id answers 404, as an unknown one does.";

export const responsesApi = defineApiGroup({
  tag: "Chat",
  description: "The Responses standard on the chat models: a translation in and out of chat completions, with the same engines, billing and limits.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/responses",
      operationId: "createResponse",
      summary: "Create a model response",
      description: `\`input\` is a string or a list of items (\`message\` with \`input_text\` / \`input_file\` / \`input_image\` parts, \`function_call\`, \`function_call_output\`, \`reasoning\`), translated to a chat request: \`instructions\` is its first system message, \`max_output_tokens\`, \`tools\` (\`function\`, and \`web_search\` served by the node's search provider, a 400 naming the tool without one), \`tool_choice\`, \`text.format\` (enforced by a grammar) and \`reasoning.effort\` their chat counterparts, and \`service_parameters\` (alias \`venice_parameters\`) as on chat. A top-level field the standard does not define is a 400 naming it. The output holds \`reasoning\`, \`message\` (its \`output_text\` with \`url_citation\` annotations for \`[REF]i[/REF]\` citations, and \`logprobs\` with \`include: ["message.output_text.logprobs"]\`), \`function_call\` and \`web_search_call\` items; \`status\` is \`incomplete\` (reason \`max_output_tokens\`) when the token limit cut the answer. \`stream: true\` answers the standard's events (\`event: <type>\` and \`data: <event JSON>\`, each with \`sequence_number\`), from \`response.created\` to \`response.completed\`, \`response.incomplete\` or \`response.failed\`. \`previous_response_id\` continues a stored response: its context, input and output come before the new input, so the model's prompt cache reuses them. ${STORAGE_NOTE} Billed, limited and recorded as chat is (usage endpoint \`/responses\`).`,
      access: "paid",
      body: { content: { "application/json": schemas.ResponseRequest } },
      responses: {
        200: {
          description: "The response, or with `stream: true` its events (a stream's cost is in its terminal event's `response.cost`)",
          headers: { ...INFERENCE_HEADERS, ...COST_HEADERS, ...CHAT_REQUEST_HEADERS },
          content: {
            "application/json": schemas.ResponseObject,
            "text/event-stream": {
              sse: schemas.ResponseStreamEvent,
              description:
                "`event: <type>` and `data: <event JSON>` per event, `sequence_number` increasing from 0; the last event is `response.completed`, `response.incomplete` or `response.failed` (no `[DONE]`).",
            },
          },
        },
      },
      errors: {
        ...INFERENCE_ERRORS,
        404: "The model does not exist, or `previous_response_id` names no stored response of the caller's",
        413: "An `input_file` part is larger than the node's upload limit (`code` PAYLOAD_TOO_LARGE)",
        502: "The web search provider failed (`code` SEARCH_PROVIDER_FAILED), or the upstream chat server refused this node or failed",
      },
    },
    {
      method: "get",
      path: "/responses/{id}",
      operationId: "getResponse",
      summary: "Retrieve a stored response",
      description: STORAGE_NOTE,
      access: "paid",
      params: schemas.ResponseIdParams,
      responses: { 200: { description: "The response as it was answered", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.ResponseObject } } },
      errors: { 404: "No stored response of the caller's with this id" },
    },
    {
      method: "delete",
      path: "/responses/{id}",
      operationId: "deleteResponse",
      summary: "Delete a stored response",
      description: STORAGE_NOTE,
      access: "paid",
      params: schemas.ResponseIdParams,
      responses: { 200: { description: "Deleted", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.DeletedResponse } } },
      errors: { 404: "No stored response of the caller's with this id" },
    },
    {
      method: "get",
      path: "/responses/{id}/input_items",
      operationId: "listInputItems",
      summary: "List a stored response's input items",
      description: `This request's own input items (not those of the responses it continued), each with its id; \`order\` (default \`desc\`), \`limit\` (1 to 100, default 20) and \`after\` (an item id) page them. ${STORAGE_NOTE}`,
      access: "paid",
      params: schemas.ResponseIdParams,
      query: schemas.InputItemsQuery,
      responses: { 200: { description: "A page of input items", headers: ACCOUNT_RATE_LIMIT_HEADERS, content: { "application/json": schemas.InputItemList } } },
      errors: { 404: "No stored response of the caller's with this id" },
    },
  ],
});
