import type { ModelManager } from "../models/ModelManager.js";

/** What the metrics read about one loaded model at scrape time. */
export interface ModelSample {
  id: string;
  kind: string;
  /** Requests waiting for a free slot; absent when the engine has no queue. */
  waiting?: number;
  /** Slots (sequences, workers) serving a request now. */
  busy?: number;
  memory?: { ramBytes: number; vramBytes: number };
}

/**
 * The one place the metrics read the model manager. `loaded()` reports queues but not memory;
 * when `models.status()` (with `memory: { ramBytes, vramBytes }`) exists, read it here instead
 * and fill `memory`: hearth_model_memory_bytes then reports it with no other change.
 */
export async function sampleModels(models: ModelManager): Promise<ModelSample[]> {
  const loaded = await models.loaded();
  return loaded.map(({ id, kind, stats }) => ({ id, kind, waiting: stats?.waiting, busy: stats?.busy }));
}
