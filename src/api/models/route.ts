import { Router } from "express";
import { basename } from "node:path";
import type { ModelEntry } from "../../config.js";
import type { ProbedChatFeatures } from "../../engines/registry.js";
import { parse } from "../../http/parse.js";
import type { AppDeps } from "../../app.js";
import { ListModelsQuery, type ModelRecord } from "./schema.js";

const EFFORTS = ["minimal", "low", "medium", "high", "xhigh", "max"] as const;

/**
 * What the chat path can do with this model, as the reference's capability flags: derived
 * from the model's own template (tool-call syntax, thought blocks, enable_thinking), not
 * claimed by configuration. The registry supplies the flags Hearth cannot derive.
 */
function derivedCapabilities(features: ProbedChatFeatures): Record<string, unknown> {
  return {
    supportsFunctionCalling: features.functionCalling,
    supportsResponseSchema: features.responseSchema,
    supportsLogProbs: features.logprobs,
    supportsReasoning: features.reasoning,
    supportsReasoningEffort: features.reasoning,
    ...(features.reasoning ? { reasoningEffortOptions: features.reasoningToggle ? ["none", ...EFFORTS] : [...EFFORTS] } : {}),
  };
}

/** The registry entry in the reference's model record shape. */
export function toModelRecord(entry: ModelEntry, startedAt: number, features: ProbedChatFeatures | null = null): ModelRecord {
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
      capabilities: features ? { ...entry.capabilities, ...derivedCapabilities(features) } : entry.capabilities,
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
  const featuresOf = (entry: ModelEntry) => (entry.type === "text" ? deps.models.chatFeatures(entry.id) : Promise.resolve(null));
  router.get("/models", async (req, res) => {
    const { type } = parse(ListModelsQuery, req.query);
    const entries = deps.models.list().filter((m) => type === "all" || (type === "code" ? m.capabilities.optimizedForCode : m.type === type));
    const data = await Promise.all(entries.map(async (m) => toModelRecord(m, deps.startedAt, await featuresOf(m))));
    res.json({ object: "list", type, data });
  });
  router.get("/models/:id", async (req, res) => {
    const entry = deps.models.get(String(req.params.id));
    res.json(toModelRecord(entry, deps.startedAt, await featuresOf(entry)));
  });
  return router;
}
