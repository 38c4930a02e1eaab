import type { ModelEntry } from "../config/modelRegistry.js";
import type { BackendDescriptor } from "./BackendDescriptor.js";
import type { Backend } from "./backendNames.js";
import { kokoroBackend } from "./backends/kokoro.js";
import { llamaBackend } from "./backends/llama.js";
import { onnxDiffusionBackend } from "./backends/onnxDiffusion.js";
import { transformersBackend } from "./backends/transformers.js";
import { upstreamBackend } from "./backends/upstream.js";
import { vitsBackend } from "./backends/vits.js";
import { whisperBackend } from "./backends/whisper.js";

export type { Backend } from "./backendNames.js";
export type { BackendNotice, EngineFactoryOptions, MemoryEstimate, ProbedChatFeatures, SharedEngineLoader, VisionAbility, VisualInput } from "./BackendDescriptor.js";

/**
 * Backend name -> its descriptor. A new backend is one descriptor file in backends/ and one
 * line here (and its name in backendNames.ts: a name without a descriptor is a compile error).
 */
export const BACKENDS: Readonly<Record<Backend, BackendDescriptor>> = Object.freeze({
  llama: llamaBackend,
  "onnx-diffusion": onnxDiffusionBackend,
  transformers: transformersBackend,
  kokoro: kokoroBackend,
  vits: vitsBackend,
  whisper: whisperBackend,
  upstream: upstreamBackend,
} satisfies Record<Backend, BackendDescriptor>);

/** The descriptor of the backend an entry names. */
export function backendOf(entry: Pick<ModelEntry, "backend">): BackendDescriptor {
  return BACKENDS[entry.backend];
}
