import type { ReplicaStatus } from "../engines/upstream/ReplicaPool.js";
import type { ModelStatus } from "../models/ModelManager.js";

/**
 * A model as the console shows it: GET /api/v1/admin/models' record, times as ISO strings.
 * Memory is null until the manager has estimated it.
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
  /** A loaded upstream model's replicas (GET /admin/models' records); null for other models. */
  replicas: ReplicaStatus[] | null;
}

/**
 * Each model's lifecycle from the model manager's status (synchronous: a model that is loading
 * must not hold up the live view), with times as ISO strings for the page.
 */
export function liveModels(statuses: readonly ModelStatus[]): LiveModel[] {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return statuses.map((status) => ({
    id: status.id,
    type: status.type,
    backend: status.backend,
    state: status.state,
    error: status.error,
    memory: { ramBytes: status.memory?.ramBytes ?? null, vramBytes: status.memory?.vramBytes ?? null },
    inFlight: status.inFlight,
    queue: status.queue ?? { busy: 0, waiting: 0 },
    loadedAt: iso(status.loadedAt),
    lastUsedAt: iso(status.lastUsedAt),
    keepAliveSeconds: status.keepAliveSeconds,
    replicas: status.replicas,
  }));
}
