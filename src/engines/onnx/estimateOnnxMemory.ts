import type { ExecutionProviders } from "../../config/backendSettings.js";
import type { MemoryEstimate } from "../BackendDescriptor.js";
import { directorySize } from "./directorySize.js";

/**
 * An ONNX model directory's memory once loaded: the size of its files, once per worker thread
 * that holds its own sessions, in VRAM when onnxruntime will run them on a provider other
 * than the CPU.
 */
export async function estimateOnnxMemory(dir: string, options: { copies: number; executionProviders: ExecutionProviders; gpu: "auto" | false }): Promise<MemoryEstimate> {
  const files = await directorySize(dir);
  const total = files * options.copies;
  // Imported here: deciding the provider loads onnxruntime, which reading the registry never needs.
  const { resolveExecutionProviders } = await import("./resolveExecutionProviders.js");
  const onGpu = (await resolveExecutionProviders(options.executionProviders, { gpu: options.gpu })).name !== "cpu";
  return onGpu ? { ramBytes: 0, vramBytes: total } : { ramBytes: total, vramBytes: 0 };
}
