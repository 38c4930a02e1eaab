import { defineApiGroup } from "./Operation.js";
import * as schemas from "./schema.js";

export const openapiApi = defineApiGroup({
  tag: "Meta",
  description: "This API's own description. The interactive reference is served at /docs.",
  schemas,
  operations: [
    {
      method: "get",
      path: "/openapi.json",
      operationId: "getOpenApiDocument",
      summary: "The OpenAPI 3.1 document of this API",
      access: "public",
      responses: { 200: { description: "This document", content: { "application/json": schemas.OpenApiDocument } } },
    },
  ],
});
