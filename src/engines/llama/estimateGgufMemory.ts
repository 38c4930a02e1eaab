import { GgufInsights, readGgufFileInfo } from "node-llama-cpp";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { MemoryEstimate } from "../BackendDescriptor.js";
import { getSharedLlama } from "./getSharedLlama.js";

/**
 * A GGUF model's memory once loaded: node-llama-cpp's own estimate of the weights plus the
 * contexts (KV cache and compute buffers for the configured context size and sequences),
 * measured by llama.cpp's simulation where available.
 */
export async function estimateGgufMemory(entry: ModelEntry, gpu: "auto" | false): Promise<MemoryEstimate> {
  const llama = await getSharedLlama(gpu);
  const insights = await GgufInsights.from(await readGgufFileInfo(entry.file!), llama);
  const settings = entry.llama;
  const gpuLayers =
    gpu === false || llama.gpu === false
      ? 0
      : settings.gpuLayers === "max"
        ? insights.totalLayers
        : settings.gpuLayers === "auto"
          ? (await insights.configurationResolver.resolveModelGpuLayersV2("auto")).gpuLayers
          : Math.min(settings.gpuLayers, insights.totalLayers);
  const model = await insights.estimateModelResourceRequirementsV2({ gpuLayers });
  let context: { cpuRam: number; gpuVram: number };
  let contexts = 1;
  if (entry.type === "embedding") {
    // Mirrors LlamaEmbeddingEngine: `parallel` contexts one token longer than the input limit.
    const size = (entry.embedding.maxInputTokens ?? Math.min(insights.trainContextSize ?? 4096, 8192) - 1) + 1;
    context = await insights.estimateContextResourceRequirementsV2({ contextSize: size, batchSize: size, sequences: 1, modelGpuLayers: gpuLayers, isEmbeddingContext: true });
    contexts = entry.embedding.parallel;
  } else {
    context = await insights.estimateContextResourceRequirementsV2({
      contextSize: settings.contextSize,
      sequences: settings.sequences,
      batchSize: settings.batchSize,
      modelGpuLayers: gpuLayers,
      // "auto" may fall back to no flash attention, which needs more memory: estimate for that.
      flashAttention: settings.flashAttention === true,
    });
  }
  return { ramBytes: Math.ceil(model.cpuRam + contexts * context.cpuRam), vramBytes: Math.ceil(model.gpuVram + contexts * context.gpuVram) };
}

/**
 * What a GGUF model's memory figure depends on besides the file: the settings the estimate reads,
 * llama.cpp's release and the device it runs on. Undefined where it also depends on the moment:
 * `gpuLayers: "auto"` with a GPU, which node-llama-cpp resolves against the free VRAM.
 */
export async function ggufMemoryKey(entry: ModelEntry, gpu: "auto" | false): Promise<string | undefined> {
  const llama = await getSharedLlama(gpu);
  const device = gpu === false || llama.gpu === false ? "cpu" : llama.gpu;
  const { gpuLayers } = entry.llama;
  if (device !== "cpu" && gpuLayers === "auto") return undefined;
  const settings =
    entry.type === "embedding"
      ? { type: "embedding", maxInputTokens: entry.embedding.maxInputTokens ?? null, parallel: entry.embedding.parallel }
      : {
          type: "chat",
          contextSize: entry.llama.contextSize,
          sequences: entry.llama.sequences,
          batchSize: entry.llama.batchSize ?? null,
          flashAttention: entry.llama.flashAttention,
        };
  return JSON.stringify({ llamaCpp: llama.llamaCppRelease.release, device, gpuLayers: device === "cpu" ? 0 : gpuLayers, ...settings });
}
