import type { ModelEntry } from "../config.js";
import { LlamaChatEngine } from "./llama/LlamaChatEngine.js";
import type { Engine } from "./types.js";

export interface EngineFactoryOptions {
  gpu: "auto" | false;
}

type EngineFactory = (entry: ModelEntry, options: EngineFactoryOptions) => Promise<Engine>;

/** Backend name -> engine factory. A new backend is one entry here (a missing one is a compile error). */
export const engineFactories = Object.freeze({
  llama: (entry, options) =>
    LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: options.gpu }),
} as const satisfies Record<ModelEntry["backend"], EngineFactory>);
