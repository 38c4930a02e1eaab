import type { ModelEntry } from "../config/modelRegistry.js";

/**
 * The standard's model names that clients send unchanged (the official SDKs' defaults and
 * examples), and the model type each stands for. A name here resolves to the model that lists
 * it in `aliases`, else to the node's default model of that type (`ModelManager.resolve`).
 */
export const STANDARD_MODEL_NAMES = Object.freeze({
  "tts-1": "tts",
  "tts-1-hd": "tts",
  "gpt-4o-mini-tts": "tts",
  "whisper-1": "asr",
  "gpt-4o-transcribe": "asr",
  "gpt-4o-mini-transcribe": "asr",
  "dall-e-2": "image",
  "dall-e-3": "image",
  "gpt-image-1": "image",
} as const satisfies Record<string, ModelEntry["type"]>);

export const standardModelType = (name: string): ModelEntry["type"] | undefined =>
  Object.hasOwn(STANDARD_MODEL_NAMES, name) ? STANDARD_MODEL_NAMES[name as keyof typeof STANDARD_MODEL_NAMES] : undefined;
