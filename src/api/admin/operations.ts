import { defineApiGroup } from "../openapi/Operation.js";
import * as schemas from "./schema.js";

export const adminApi = defineApiGroup({
  tag: "Admin models",
  description:
    "Node administration: what each model is doing (state, memory, queue, requests in flight), and loading or unloading one by hand. The node operator's keys only (`hearth keys create --operator`); an account admin key gets 403.",
  schemas,
  operations: [
    {
      method: "get",
      path: "/admin/models",
      operationId: "listModelStatus",
      summary: "Every configured model's state, estimated memory, queue and requests in flight, with the memory budget",
      access: "adminKey",
      responses: { 200: { description: "The models and the budget", content: { "application/json": schemas.AdminModelsResponse } } },
      errors: { 403: "Not the node operator's key (an inference key, or an account admin key: those manage their own account only)" },
    },
    {
      method: "post",
      path: "/admin/models/{id}/load",
      operationId: "loadModel",
      summary: "Load a model now (evicting idle models, least recently used first, if the budget needs room)",
      description: "Model ids may contain '/'; send them as they are or URL-encoded.",
      access: "adminKey",
      params: schemas.AdminModelParams,
      responses: { 200: { description: "The model after loading", content: { "application/json": schemas.AdminModelResponse } } },
      errors: {
        403: "Not the node operator's key (an inference key, or an account admin key: those manage their own account only)",
        404: "No such model",
        503: "The model could not be loaded (the cause is in the message), or the budget cannot make room",
      },
    },
    {
      method: "post",
      path: "/admin/models/{id}/unload",
      operationId: "unloadModel",
      summary: "Unload a model now",
      description: "Model ids may contain '/'; send them as they are or URL-encoded.",
      access: "adminKey",
      params: schemas.AdminModelParams,
      responses: { 200: { description: "The model after unloading", content: { "application/json": schemas.AdminModelResponse } } },
      errors: {
        403: "Not the node operator's key (an inference key, or an account admin key: those manage their own account only)",
        404: "No such model",
        409: "Requests are in flight or the model is loading (MODEL_BUSY)",
      },
    },
  ],
});
