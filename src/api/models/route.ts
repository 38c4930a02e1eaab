import { Router } from "express";
import { basename } from "node:path";
import type { ModelEntry } from "../../config.js";
import { parse } from "../../http/parse.js";
import type { AppDeps } from "../../app.js";
import { ListModelsQuery, type ModelRecord } from "./schema.js";

/** The registry entry in the reference's model record shape. */
export function toModelRecord(entry: ModelEntry, startedAt: number): ModelRecord {
  const isText = entry.type === "text";
  const record: ModelRecord = {
    id: entry.id,
    object: "model",
    type: entry.type,
    created: entry.created ?? Math.floor(startedAt / 1000),
    owned_by: "hearth",
    model_spec: {
      name: entry.name ?? entry.id,
      description: entry.description,
      privacy: entry.privacy,
      beta: entry.beta,
      offline: entry.offline,
      modelSource: entry.file ? basename(entry.file) : entry.backend,
      traits: entry.traits,
      capabilities: entry.capabilities,
      constraints: entry.constraints,
      pricing: entry.pricing,
      deprecation: entry.deprecation ? { date: entry.deprecation.date, replacementModelId: entry.deprecation.replacementModelId } : undefined,
    },
  };
  if (isText) {
    record.context_length = entry.llama.contextSize;
    record.model_spec.availableContextTokens = entry.llama.contextSize;
    record.model_spec.maxCompletionTokens = entry.maxCompletionTokens ?? entry.llama.contextSize;
  }
  return record;
}

export function modelsRouter(deps: AppDeps): Router {
  const router = Router();
  router.get("/models", (req, res) => {
    const { type } = parse(ListModelsQuery, req.query);
    const data = deps.models
      .list()
      .filter((m) => type === "all" || (type === "code" ? m.capabilities.optimizedForCode : m.type === type))
      .map((m) => toModelRecord(m, deps.startedAt));
    res.json({ object: "list", type, data });
  });
  router.get("/models/:id", (req, res) => {
    res.json(toModelRecord(deps.models.get(req.params.id), deps.startedAt));
  });
  return router;
}
