import type { ModelEntry } from "../config.js";
import { OnnxImageEngine, OnnxVideoEngine } from "./diffusion/OnnxDiffusionEngine.js";
import { LlamaChatEngine } from "./llama/LlamaChatEngine.js";
import { LlamaEmbeddingEngine } from "./llama/LlamaEmbeddingEngine.js";
import { TransformersEmbeddingEngine } from "./transformers/TransformersEmbeddingEngine.js";
import type { Engine } from "./types.js";

export interface EngineFactoryOptions {
  gpu: "auto" | false;
}

type EngineFactory = (entry: ModelEntry, options: EngineFactoryOptions) => Promise<Engine>;

/** Backend name -> engine factory. A new backend is one entry here (a missing one is a compile error). */
export const engineFactories = Object.freeze({
  llama: (entry, options) =>
    entry.type === "embedding"
      ? LlamaEmbeddingEngine.load(entry, options.gpu)
      : LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: options.gpu }),
  "onnx-diffusion": (entry) => (entry.type === "video" ? OnnxVideoEngine.load(entry) : OnnxImageEngine.load(entry)),
  transformers: (entry) => TransformersEmbeddingEngine.load(entry),
} as const satisfies Record<ModelEntry["backend"], EngineFactory>);
