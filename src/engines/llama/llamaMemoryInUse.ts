import type { LlamaContext, LlamaEmbeddingContext, LlamaModel } from "node-llama-cpp";
import type { MemoryEstimate } from "../types.js";

/** node-llama-cpp's native model and context objects, as far as this reads them. */
interface NativeMemoryBreakdown {
  getMemoryBreakdown(): { cpuRam: number; gpuVram: number };
}

/**
 * What llama.cpp holds for a loaded model and its contexts: the weights' buffers, the KV caches
 * and the compute buffers, in RAM and in GPU memory. The same measure as the V2 estimate
 * (estimateGgufMemory.ts), which reads it from a simulated load, and equal to it for the same
 * settings; read from the real one it costs nothing, where the simulation loads the model again
 * (its vocabulary included) and leaves about 90 MB in the process's heaps.
 *
 * node-llama-cpp 3.22 calls `getMemoryBreakdown` on its native objects after every load to
 * account their memory, but does not expose them (`_model`, `_ctx`, `_llamaContext`); the
 * version is pinned by the install-time patch, and a test reads this against the estimate.
 */
export function llamaMemoryInUse(model: LlamaModel, contexts: readonly (LlamaContext | LlamaEmbeddingContext)[]): MemoryEstimate {
  const natives: NativeMemoryBreakdown[] = [(model as unknown as { _model: NativeMemoryBreakdown })._model];
  for (const context of contexts) {
    const llamaContext = "_llamaContext" in context ? (context as unknown as { _llamaContext: LlamaContext })._llamaContext : context;
    natives.push((llamaContext as unknown as { _ctx: NativeMemoryBreakdown })._ctx);
  }
  let ramBytes = 0;
  let vramBytes = 0;
  for (const native of natives) {
    const { cpuRam, gpuVram } = native.getMemoryBreakdown();
    ramBytes += cpuRam;
    vramBytes += gpuVram;
  }
  return { ramBytes, vramBytes };
}
