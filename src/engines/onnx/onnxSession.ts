import { existsSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import type { OnnxSettings } from "../../config/backendSettings.js";
import type { SessionLike } from "./OffThreadSession.js";

/** transformers.js' file-name suffix per dtype: onnx/model.onnx, onnx/model_quantized.onnx, ... */
const DTYPE_SUFFIX: Record<OnnxSettings["dtype"], string> = {
  fp32: "",
  fp16: "_fp16",
  q8: "_quantized",
  int8: "_int8",
  uint8: "_uint8",
  q4: "_q4",
  q4f16: "_q4f16",
  bnb4: "_bnb4",
};

/** The weights file of `name` (usually "model") for a dtype, in a model directory's onnx/ folder. */
export function onnxFile(modelDir: string, dtype: OnnxSettings["dtype"], name = "model"): string {
  const path = join(modelDir, "onnx", `${name}${DTYPE_SUFFIX[dtype]}.onnx`);
  if (!existsSync(path)) throw new Error(`${path} not found (onnx.dtype "${dtype}" picks the file; is the model directory complete?)`);
  return path;
}

/**
 * The session options a model's onnx settings ask for: its threads, and onnxruntime's CPU memory
 * arena off where the setting (or, for "auto", the engine's `arenaByDefault`) says so.
 */
export function engineSessionOptions(settings: Pick<OnnxSettings, "threads" | "memoryArena">, arenaByDefault = true): ort.InferenceSession.SessionOptions {
  const arena = settings.memoryArena === "auto" ? arenaByDefault : settings.memoryArena;
  return { ...(settings.threads > 0 ? { intraOpNumThreads: settings.threads } : {}), ...(arena ? {} : { enableCpuMemArena: false }) };
}

/** onnxruntime session options from a model's onnx settings, on the providers resolveExecutionProviders chose. */
export function sessionOptions(settings: OnnxSettings, providers: readonly string[]): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: [...providers],
    graphOptimizationLevel: "all",
    ...engineSessionOptions(settings),
    ...(settings.threads > 0 ? { interOpNumThreads: 1 } : {}),
  };
}

/** Inside loadWithSessionsOffThread, the session opens on the load's worker thread. */
export function openSession(path: string, settings: OnnxSettings, providers: readonly string[]): Promise<SessionLike> {
  return ort.InferenceSession.create(path, sessionOptions(settings, providers));
}
