import type { ModelEntry } from "../config/modelRegistry.js";
import type { MemoryEstimate } from "../engines/BackendDescriptor.js";
import { BACKENDS } from "../engines/registry.js";

export type { MemoryEstimate };

/**
 * What a model needs in memory once loaded, before loading it (the budget is checked
 * against this): its backend's estimate (GGUF: node-llama-cpp's; ONNX: the size of its files).
 * A model without files (an upstream relay) holds nothing here.
 */
export async function estimateMemory(entry: ModelEntry, gpu: "auto" | false): Promise<MemoryEstimate> {
  if (!entry.file) return { ramBytes: 0, vramBytes: 0 };
  return BACKENDS[entry.backend].estimateMemory(entry, gpu);
}
