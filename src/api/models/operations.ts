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
      path: "/models/traits",
      operationId: "listModelTraits",
      summary: "Model traits",
      description:
        "Each trait (`default`, `fastest`, ... as the registry's `traits` give them) and the model of the type that has it; " +
        "when several models share a trait, the first in the registry.",
      access: "public",
      query: schemas.ModelNamesQuery,
      responses: { 200: { description: "Trait -> model id", content: { "application/json": schemas.ModelTraitList } } },
    },
    {
      method: "get",
      path: "/models/compatibility_mapping",
      operationId: "listModelCompatibilityMapping",
      summary: "Model compatibility mapping",
      description:
        "Other model names requests may use and the local model each resolves to: the registry's `aliases` (e.g. another provider's " +
        "model names) and the standard's names (`tts-1`, `whisper-1`, ...) that fall to the default model of their type.",
      access: "public",
      query: schemas.ModelNamesQuery,
      responses: { 200: { description: "Name -> model id", content: { "application/json": schemas.ModelCompatibilityList } } },
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
