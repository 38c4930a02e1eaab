import { z } from "zod";
import { defineApiGroup } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const modelsApi = defineApiGroup({
  tag: "Models",
  description: "The models this node serves, with their capabilities, constraints and prices.",
  schemas,
  operations: [
    {
      method: "get",
      path: "/models",
      operationId: "listModels",
      summary: "List models",
      access: "public",
      query: schemas.ListModelsQuery,
      responses: { 200: { description: "The models of the requested type", content: { "application/json": schemas.ModelList } } },
    },
    {
      method: "get",
      path: "/models/{id}",
      operationId: "getModel",
      summary: "Get one model",
      description: "Model ids may contain `/` (e.g. `openai/whisper-large-v3`): the rest of the path is the id.",
      access: "public",
      params: z.object({ id: z.string().describe("The model id") }),
      responses: { 200: { description: "The model", content: { "application/json": schemas.ModelRecord } } },
      errors: { 404: "No such model" },
    },
  ],
});
