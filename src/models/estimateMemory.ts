import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { GgufInsights, readGgufFileInfo } from "node-llama-cpp";
import type { ModelEntry } from "../config/modelRegistry.js";
import { getSharedLlama } from "../engines/llama/getSharedLlama.js";
import { resolveExecutionProviders } from "../engines/onnx/resolveExecutionProviders.js";
import { executionProviderSettings } from "../engines/registry.js";

export interface MemoryEstimate {
  ramBytes: number;
  vramBytes: number;
}

/**
 * What a model needs in memory once loaded, before loading it (the budget is checked
 * against this). GGUF: node-llama-cpp's own estimate of the weights plus the contexts
 * (KV cache and compute buffers for the configured context size and sequences), measured
 * by llama.cpp's simulation where available. ONNX directories: the size of their files,
 * once per worker thread that holds its own sessions, in VRAM when onnxruntime will run them
 * on a provider other than the CPU. Upstream models hold nothing.
 */
export async function estimateMemory(entry: ModelEntry, gpu: "auto" | false): Promise<MemoryEstimate> {
  if (entry.backend === "upstream" || !entry.file) return { ramBytes: 0, vramBytes: 0 };
  if (entry.backend === "llama") return estimateGguf(entry, gpu);
  const files = await directorySize(entry.file);
  // Each diffusion worker (and each embedding worker) loads its own sessions.
  const copies = entry.backend === "onnx-diffusion" ? entry.image.workers : 1;
  const setting = executionProviderSettings[entry.backend as keyof typeof executionProviderSettings]?.(entry);
  const onGpu = setting !== undefined && (await resolveExecutionProviders(setting, { gpu })).name !== "cpu";
  return onGpu ? { ramBytes: 0, vramBytes: files * copies } : { ramBytes: files * copies, vramBytes: 0 };
}

async function estimateGguf(entry: ModelEntry, gpu: "auto" | false): Promise<MemoryEstimate> {
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

/** Bytes of every file under a directory (or of one file). */
export async function directorySize(path: string): Promise<number> {
  const info = await stat(path);
  if (!info.isDirectory()) return info.size;
  let total = 0;
  for (const item of await readdir(path, { withFileTypes: true })) total += await directorySize(join(path, item.name));
  return total;
}
