/**
 * The backends a registry entry may name. The registry of descriptors (engines/registry.ts)
 * must have one for each: a name without a descriptor is a compile error.
 */
export const BACKEND_NAMES = ["llama", "onnx-diffusion", "transformers", "kokoro", "vits", "whisper", "upstream"] as const;
export type Backend = (typeof BACKEND_NAMES)[number];
