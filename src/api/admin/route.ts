import { Router } from "express";
import type { AppDeps } from "../../appDeps.js";
import { requireOperator } from "../../auth/apiKeyAuth.js";
import { parse } from "../../http/parse.js";
import type { ModelStatus } from "../../models/ModelManager.js";
import { AdminModelParams, type AdminModelResponse, type AdminModelsResponse, type ModelStatusRecord } from "./schema.js";

const toRecord = (status: ModelStatus): ModelStatusRecord => ({ object: "model.status", ...status });

/**
 * Node administration (the operator's keys only): what each model is doing (loaded, memory, queue,
 * in-flight requests), and loading or unloading one by hand.
 */
export type AdminRouterDeps = Pick<AppDeps, "models" | "db" | "authenticateKey">;

export function adminRouter(deps: AdminRouterDeps): Router {
  const router = Router();
  const { models } = deps;
  const operatorOnly = requireOperator(deps.db);

  router.get("/admin/models", deps.authenticateKey, operatorOnly, async (_req, res) => {
    await models.estimate();
    const { models: data, budget } = models.status();
    const response: AdminModelsResponse = { object: "list", data: data.map(toRecord), budget };
    res.json(response);
  });

  // `*id` so that ids with '/' (openai/whisper-large-v3) need no encoding.
  router.post("/admin/models/*id/load", deps.authenticateKey, operatorOnly, async (req, res) => {
    const { id } = parse(AdminModelParams, { id: joinId(req.params.id) });
    const status = await models.load(id);
    const response: AdminModelResponse = { data: toRecord(status), budget: models.budget() };
    res.json(response);
  });

  router.post("/admin/models/*id/unload", deps.authenticateKey, operatorOnly, async (req, res) => {
    const { id } = parse(AdminModelParams, { id: joinId(req.params.id) });
    const status = await models.unload(id);
    const response: AdminModelResponse = { data: toRecord(status), budget: models.budget() };
    res.json(response);
  });

  return router;
}

/** Express 5 hands a wildcard over as its segments. */
function joinId(value: unknown): string {
  return Array.isArray(value) ? value.join("/") : String(value ?? "");
}
