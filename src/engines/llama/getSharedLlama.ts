import type { LlamaSettings } from "../../config/backendSettings.js";
import { availableParallelism } from "node:os";
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";

let shared: Promise<Llama> | undefined;

/**
 * One llama.cpp binding per process. node-llama-cpp picks the best prebuilt backend itself
 * (CUDA, Vulkan or Metal when present, else CPU); HEARTH_GPU=false forces the CPU build.
 * `build: "never"` keeps start-up from compiling llama.cpp when no prebuilt binary fits
 * (a local build made with `npx node-llama-cpp source build` is still used).
 */
export function getSharedLlama(gpu: "auto" | false = "auto"): Promise<Llama> {
  shared ??= getLlama({ gpu, build: "never", logLevel: LlamaLogLevel.warn, progressLogs: false });
  return shared;
}

/**
 * CPU threads for a context: the configured number, or one per core the process may use.
 * node-llama-cpp's own default is max(4, cores): on a 2-core machine 4 threads spin-wait on
 * each other and a 0.5B model falls from ~20 to under 1 token/s (measured, docs/bench.md).
 */
export function contextThreads(configured: number): number {
  return configured > 0 ? configured : Math.max(1, availableParallelism());
}

/**
 * Whether node-llama-cpp checks that a model and its contexts fit in memory before creating them.
 * On the CPU it does not: the checks simulate the load in llama.cpp, the whole vocabulary built once
 * more per simulated model (two, and a simulated context, on a chat model's first request: about
 * 0.5 s of its time to first token on the Qwen2.5-0.5B shape, and what they allocate glibc keeps
 * resident), RAM is paged by the operating system, and a node that must not overcommit sets
 * Hearth's memory budget, which keeps its own estimate. With a GPU the checks stay: VRAM is not
 * paged, and they are how `gpuLayers: "auto"` is resolved.
 */
export function skipsMemorySafetyChecks(llama: Llama): boolean {
  return llama.gpu === false;
}

/** A chat context's options from the registry's llama settings (the server and the bench build it alike). */
export function chatContextOptions(settings: LlamaSettings) {
  return {
    contextSize: settings.contextSize,
    sequences: settings.sequences,
    threads: contextThreads(settings.threads),
    batchSize: settings.batchSize,
    flashAttention: settings.flashAttention,
  };
}
