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
}

/**
 * The one place the metrics read the model manager: every loaded model with its engine queue
 * and its estimated memory (GGUF: node-llama-cpp's estimate; ONNX: file sizes).
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
    }));
}
