import type { ModelManager } from "../models/ModelManager.js";

/**
 * A model as the console shows it: the shape of GET /api/v1/admin/models' records. Fields this
 * node cannot tell yet are null (memory, times); the console shows them as unknown.
 */
export interface LiveModel {
  id: string;
  type: string;
  backend: string;
  state: "unloaded" | "loading" | "loaded" | "failed";
  error: string | null;
  memory: { ramBytes: number | null; vramBytes: number | null };
  inFlight: number;
  queue: { busy: number; waiting: number };
  loadedAt: string | null;
  lastUsedAt: string | null;
  keepAliveSeconds: number | null;
}

/**
 * The registry with each model's load state and queue, read without awaiting anything (a model
 * that is loading must not hold up the live view): `loadedEngine` answers for finished loads only.
 */
export function liveModels(models: ModelManager): LiveModel[] {
  return models.list().map((entry) => {
    const engine = models.loadedEngine(entry.id);
    const stats = engine && "stats" in engine ? (engine as { stats(): { busy: number; waiting: number } }).stats() : undefined;
    return {
      id: entry.id,
      type: entry.type,
      backend: entry.backend,
      state: engine ? "loaded" : "unloaded",
      error: null,
      memory: { ramBytes: null, vramBytes: null },
      inFlight: stats?.busy ?? 0,
      queue: { busy: stats?.busy ?? 0, waiting: stats?.waiting ?? 0 },
      loadedAt: null,
      lastUsedAt: null,
      keepAliveSeconds: null,
    };
  });
}
