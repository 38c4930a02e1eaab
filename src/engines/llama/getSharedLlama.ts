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
