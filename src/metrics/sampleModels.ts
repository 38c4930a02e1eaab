import type { Engine } from "../engines/types.js";
import type { ReplicaStatus } from "../engines/upstream/ReplicaPool.js";
import { KIND_OF_TYPE, type ModelManager } from "../models/ModelManager.js";

/** What the metrics read about one loaded model at scrape time. */
export interface ModelSample {
  id: string;
  kind: string;
  /** Requests waiting for a free slot; absent when the engine has no queue. */
  waiting?: number;
  /** Slots (sequences, workers) serving a request now. */
  busy?: number;
  memory?: { ramBytes: number; vramBytes: number };
  /** An upstream model's replicas, with the answer latencies (seconds) each had since the last scrape. */
  replicas?: (ReplicaStatus & { latencies: number[] })[];
}

/**
 * The one place the metrics read the model manager: every loaded model with its engine queue
 * and its estimated memory (GGUF: node-llama-cpp's estimate; ONNX: file sizes), and an upstream
 * model's replicas.
 */
export function sampleModels(models: ModelManager): ModelSample[] {
  return models
    .status()
    .models.filter((status) => status.state === "loaded")
    .map((status) => ({
      id: status.id,
      kind: KIND_OF_TYPE[status.type] ?? status.type,
      waiting: status.queue?.waiting,
      busy: status.queue?.busy,
      memory: status.memory ?? undefined,
      replicas: status.replicas ? withLatencies(status.replicas, models.loadedEngine(status.id)) : undefined,
    }));
}

function withLatencies(replicas: readonly ReplicaStatus[], engine: Engine | undefined): (ReplicaStatus & { latencies: number[] })[] {
  const taken = new Map((engine?.replicaPool?.takeLatencies() ?? []).map(({ replica, seconds }) => [replica, seconds]));
  return replicas.map((replica) => ({ ...replica, latencies: taken.get(replica.baseUrl) ?? [] }));
}
