import type { ExecutionProviders } from "../config/backendSettings.js";
import type { Backend, ModelEntry } from "../config/modelRegistry.js";
import { diffusionPoolKey, OnnxImageEngine, OnnxVideoEngine, startDiffusionPool, type DiffusionPool } from "./diffusion/OnnxDiffusionEngine.js";
import { kokoroStandardVoices } from "./kokoro/kokoroStandardVoices.js";
import { listKokoroVoices } from "./kokoro/kokoroVoices.js";
import { LlamaChatEngine } from "./llama/LlamaChatEngine.js";
import { LlamaEmbeddingEngine } from "./llama/LlamaEmbeddingEngine.js";
import { everyStandardVoiceTo } from "./standardVoices.js";
import type { Engine } from "./types.js";
import { UpstreamChatEngine, upstreamChatFeatures } from "./upstream/UpstreamChatEngine.js";
import { UpstreamSpeechEngine } from "./upstream/UpstreamSpeechEngine.js";
import { vitsVoices } from "./vits/vitsVoices.js";
import { probeChatFeatures } from "./llama/probeChatFeatures.js";

export interface EngineFactoryOptions {
  gpu: "auto" | false;
}

type EngineFactory = (entry: ModelEntry, options: EngineFactoryOptions) => Promise<Engine>;

/** Backend name -> engine factory. A new backend is one entry here (a missing one is a compile error). */
export const engineFactories = Object.freeze({
  llama: (entry, options) =>
    entry.type === "embedding"
      ? LlamaEmbeddingEngine.load(entry, options.gpu)
      : LlamaChatEngine.load({ modelId: entry.id, file: entry.file!, settings: entry.llama, maxWaiting: entry.queue.maxWaiting, gpu: options.gpu }),
  "onnx-diffusion": (entry, options) => (entry.type === "video" ? OnnxVideoEngine.load(entry, options.gpu) : OnnxImageEngine.load(entry, options.gpu)),
  // transformers.js backs these four: it is imported when the first of them loads, not at start
  // (about 165 MiB of memory and a second of start-up a chat-only node never needs).
  transformers: async (entry, options) => (await import("./transformers/TransformersEmbeddingEngine.js")).TransformersEmbeddingEngine.load(entry, options.gpu),
  kokoro: async (entry, options) => (await import("./kokoro/KokoroEngine.js")).KokoroEngine.load(entry, options.gpu),
  vits: async (entry, options) => (await import("./vits/VitsEngine.js")).VitsEngine.load(entry, options.gpu),
  whisper: async (entry, options) => (await import("./whisper/WhisperEngine.js")).WhisperEngine.load(entry, options.gpu),
  upstream: (entry) => (entry.type === "text" ? UpstreamChatEngine.load(entry) : UpstreamSpeechEngine.load(entry)),
} as const satisfies Record<Backend, EngineFactory>);

/**
 * Backends whose entries can share one loaded model: entries with the same key load it once
 * and each gets its own engine over it (an image and a video model on the same diffusion
 * files run on one worker pool). The manager disposes the shared model, never the views.
 */
export interface SharedEngineLoader<Shared> {
  key(entry: ModelEntry): string;
  load(entry: ModelEntry, options: EngineFactoryOptions): Promise<Shared>;
  view(shared: Shared, entry: ModelEntry): Engine;
  dispose(shared: Shared): Promise<void>;
}

export const sharedEngineLoaders = Object.freeze({
  "onnx-diffusion": {
    key: diffusionPoolKey,
    load: (entry, options) => startDiffusionPool(entry, options.gpu),
    view: (shared, entry) => (entry.type === "video" ? OnnxVideoEngine.over(shared) : OnnxImageEngine.over(shared)),
    dispose: (shared) => shared.pool.dispose(),
  } satisfies SharedEngineLoader<DiffusionPool>,
} as const satisfies Partial<Record<Backend, SharedEngineLoader<any>>>);

/**
 * ONNX backend name -> its execution-provider setting (onnxruntime backends only: llama.cpp has
 * llama.gpuLayers, an upstream runs elsewhere). The memory estimate reads it to count VRAM.
 */
export const executionProviderSettings = Object.freeze({
  "onnx-diffusion": (entry) => entry.image.executionProviders,
  transformers: (entry) => entry.embedding.executionProviders,
  kokoro: (entry) => entry.onnx.executionProviders,
  vits: (entry) => entry.onnx.executionProviders,
  whisper: (entry) => entry.onnx.executionProviders,
} as const satisfies Partial<Record<Backend, (entry: ModelEntry) => ExecutionProviders>>);

/**
 * The voices a speech backend offers, read without loading the model (GET /models stays cheap):
 * Kokoro lists its voices/ folder, the others their configuration.
 */
export const speechVoiceListers = Object.freeze({
  kokoro: (entry) => {
    const files = listKokoroVoices(entry.file!);
    return entry.speech.voices ? entry.speech.voices.filter((v) => files.includes(v)) : files;
  },
  vits: (entry) => vitsVoices(entry),
  upstream: (entry) => entry.speech.voices ?? [],
} as const satisfies Partial<Record<Backend, (entry: ModelEntry) => string[]>>);

/**
 * Each speech backend's default map from the standard's voices (alloy, onyx, ...) to its own,
 * given the model's voices; `speech.voiceAliases` in the registry overrides entries. Kokoro picks
 * by name and gender, a VITS model has one speaker for all of them, and an upstream gets the
 * names as they are (it speaks the standard itself).
 */
export const standardVoiceMaps = Object.freeze({
  kokoro: (_entry, voices) => kokoroStandardVoices(voices),
  vits: (entry, voices) => everyStandardVoiceTo(entry.speech.defaultVoice ?? voices[0]),
  upstream: () => ({}),
} as const satisfies Partial<Record<Backend, (entry: ModelEntry, voices: readonly string[]) => Record<string, string>>>);

/** What a model's chat features are before it is loaded (for GET /models). */
export type ProbedChatFeatures = { functionCalling: boolean; reasoning: boolean; reasoningToggle: boolean; responseSchema: boolean; logprobs: boolean };

/** Chat backend name -> how to learn a model's chat features without loading it. */
export const chatFeatureProbes = Object.freeze({
  llama: async (entry: ModelEntry): Promise<ProbedChatFeatures> => ({ ...(await probeChatFeatures(entry.file!)), responseSchema: true, logprobs: true }),
  // An upstream's features are what its configuration says (GET /models never calls the upstream).
  upstream: async (entry: ModelEntry): Promise<ProbedChatFeatures> => upstreamChatFeatures(entry.upstream),
} as const satisfies Partial<Record<Backend, (entry: ModelEntry) => Promise<ProbedChatFeatures>>>);
