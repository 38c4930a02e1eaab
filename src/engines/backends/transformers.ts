import { join } from "node:path";
import { EmbeddingSettings, OnnxSettings, UpscaleSettings } from "../../config/backendSettings.js";
import { alwaysServable, needsFile, type BackendDescriptor } from "../BackendDescriptor.js";
import { estimateOnnxMemory } from "../onnx/estimateOnnxMemory.js";
import { inputLimit, readJson } from "../transformers/modelConfig.js";

/**
 * transformers.js ONNX models: embedding encoders, super-resolution (upscale) and background-removal models. transformers.js is imported when the first
 * of its models loads, not at start (about 165 MiB of memory and a second of start-up a
 * chat-only node never needs).
 */
export const transformersBackend: BackendDescriptor = {
  serves: ["embedding", "upscale", "background-removal"],
  settings: { embedding: EmbeddingSettings, onnx: OnnxSettings, upscale: UpscaleSettings },
  entryProblems: needsFile('a transformers model needs its model directory in "file"'),
  servable: alwaysServable,
  load: async (entry, options) => {
    if (entry.type === "upscale") return (await import("../transformers/UpscaleEngine.js")).TransformersUpscaleEngine.load(entry, options.gpu);
    if (entry.type === "background-removal") return (await import("../transformers/BackgroundRemovalEngine.js")).TransformersBackgroundRemovalEngine.load(entry, options.gpu);
    return (await import("../transformers/TransformersEmbeddingEngine.js")).TransformersEmbeddingEngine.load(entry, options.gpu);
  },
  estimateMemory: (entry, gpu) =>
    estimateOnnxMemory(entry.file!, { copies: 1, executionProviders: entry.type === "embedding" ? entry.embedding.executionProviders : entry.onnx.executionProviders, gpu }),
  embeddingShape(entry) {
    if (!entry.file) return {};
    const hidden = Number(readJson(join(entry.file, "config.json"))?.hidden_size);
    return { dimensions: Number.isFinite(hidden) && hidden > 0 ? hidden : undefined, maxInputTokens: inputLimit(entry.file, undefined) };
  },
};
