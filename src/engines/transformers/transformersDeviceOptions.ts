import type { InferenceSession } from "onnxruntime-node";

/**
 * transformers.js loading options that run a model on the execution providers Hearth resolved
 * (resolveExecutionProviders). The providers go in session_options, which transformers.js hands
 * to onnxruntime as they are; `device` matches the first of them, since transformers.js picks its
 * per-device defaults by it (and would otherwise turn its own device into ["cpu"] when
 * session_options names none).
 */
export function transformersDeviceOptions(providers: readonly string[], sessionOptions: InferenceSession.SessionOptions = {}) {
  return {
    device: providers[0] === "cuda" ? ("cuda" as const) : ("cpu" as const),
    session_options: { ...sessionOptions, executionProviders: [...providers] },
  };
}
