import type { ModelEntry } from "../config.js";
import { LlamaChatEngine } from "./llama/LlamaChatEngine.js";
import { probeChatFeatures } from "./llama/probeChatFeatures.js";
import type { ChatEngine } from "./types.js";

export interface EngineFactoryOptions {
  gpu: "auto" | false;
}

/** Backend name -> chat engine factory. A new backend is one entry here (a missing one is a compile error). */
export const chatEngineFactories = Object.freeze({
  llama: (entry: ModelEntry, options: EngineFactoryOptions): Promise<ChatEngine> =>
    LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: options.gpu }),
} as const satisfies Record<ModelEntry["backend"], (entry: ModelEntry, options: EngineFactoryOptions) => Promise<ChatEngine>>);

/** What a model's chat features are before it is loaded (for GET /models). */
export type ProbedChatFeatures = { functionCalling: boolean; reasoning: boolean; reasoningToggle: boolean; responseSchema: boolean; logprobs: boolean };

/** Backend name -> how to learn a model's chat features without loading it. */
export const chatFeatureProbes = Object.freeze({
  llama: async (entry: ModelEntry): Promise<ProbedChatFeatures> => ({ ...(await probeChatFeatures(entry.file!)), responseSchema: true, logprobs: true }),
} as const satisfies Record<ModelEntry["backend"], (entry: ModelEntry) => Promise<ProbedChatFeatures>>);
