import { ACCEPT_ENCODING_HEADER, COST_HEADERS, defineApiGroup, INFERENCE_ERRORS, INFERENCE_HEADERS } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const embeddingsApi = defineApiGroup({
  tag: "Embeddings",
  description: "Vector embeddings of text.",
  schemas,
  operations: [
    {
      method: "post",
      path: "/embeddings",
      operationId: "createEmbedding",
      summary: "Create embeddings",
      description: "Token-array inputs are refused with a 400: send strings.",
      access: "paid",
      headers: ACCEPT_ENCODING_HEADER,
      body: { content: { "application/json": schemas.CreateEmbeddingRequest } },
      responses: {
        200: { description: "One embedding per input", headers: { ...INFERENCE_HEADERS, ...COST_HEADERS }, content: { "application/json": schemas.CreateEmbeddingResponse } },
      },
      errors: INFERENCE_ERRORS,
    },
  ],
});
