import type { z } from "zod";
import type { ModelEntry } from "../config/modelRegistry.js";
import type { Engine, MemoryEstimate } from "./types.js";

export type { MemoryEstimate };

export interface EngineFactoryOptions {
  gpu: "auto" | false;
}

/** Something the operator should know about how a backend will run here (the server logs it as a warning). */
export interface BackendNotice {
  message: string;
  /** Structured fields for the log line. */
  fields?: Record<string, unknown>;
}

/** What a model's chat features are before it is loaded (for GET /models). */
export type ProbedChatFeatures = {
  functionCalling: boolean;
  reasoning: boolean;
  reasoningToggle: boolean;
  responseSchema: boolean;
  logprobs: boolean;
};

/** The pictures and video one request to a model may carry. */
export interface VisionAbility {
  maxImages: number;
  /** 0: no video_url parts. */
  maxVideos: number;
}

/**
 * How a text model takes image and video parts: decoded here (pixels for the engine), relayed
 * unchanged (an upstream), or not at all, with the reason and the way to serve pictures.
 */
export type VisualInput =
  | ({ kind: "decoded"; maxImagePixels: number; videoFrames: number } & VisionAbility)
  | ({ kind: "relayed" } & VisionAbility)
  | { kind: "none"; reason: string };

/** A problem with a registry entry, named by its field (`file`, `upstream`, ...). */
export interface EntryProblem {
  path: string;
  message: string;
}

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

/**
 * Everything Hearth knows about one backend, in one place: what it serves, which registry
 * sections it reads, how to load it, and what can be learned about its models without
 * loading them. Everything heavy (native libraries, transformers.js) is imported inside the
 * functions, so reading the registry (`hearth models list`, config validation) stays quick.
 */
export interface BackendDescriptor {
  /** The model types it serves: start-up refuses an entry of another type. */
  readonly serves: readonly ModelEntry["type"][];
  /** The sections of a registry entry it reads, with their schemas (src/config/backendSettings.ts). */
  readonly settings: Readonly<Record<string, z.ZodType>>;
  /** What an entry for this backend must have besides the common fields (checked at start-up). */
  entryProblems(entry: ModelEntry): EntryProblem[];
  /** Whether its models can run here; one that cannot is left out of every listing, with the reason. */
  servable(entry: ModelEntry): { servable: true } | { servable: false; reason: string };
  /** Where its models run when not on this machine (a relay's upstream host); undefined: here. */
  remoteHost?(entry: ModelEntry): string | undefined;
  /** Loads one entry's engine. */
  load(entry: ModelEntry, options: EngineFactoryOptions): Promise<Engine>;
  /** Set when entries on the same files share one loaded model (then `load` is not used). */
  readonly shared?: SharedEngineLoader<unknown>;
  /** Memory a model will need once loaded, without loading it. */
  estimateMemory(entry: ModelEntry, gpu: "auto" | false): Promise<MemoryEstimate>;
  /**
   * What a model's memory figure depends on besides its file, as a key under which the store
   * keeps the figure across starts (where `estimateMemory` is costly); undefined, or no method:
   * not kept (the figure also depends on the machine's state, or is cheap to make again).
   */
  memoryKey?(entry: ModelEntry, gpu: "auto" | false): Promise<string | undefined>;
  /**
   * Work every first load of its models would start with that needs no loaded model (loading a
   * native library, reading the registry's model files: `entries` are this backend's): a serving
   * node does it once, in the background, after it starts listening. Resolves with what the
   * operator should know about how the backend will run here (logged as warnings).
   */
  prepare?(options: EngineFactoryOptions, entries: readonly ModelEntry[]): Promise<BackendNotice[]>;
  /** Text backends: the chat features of a model without loading it. */
  probeChatFeatures?(entry: ModelEntry): Promise<ProbedChatFeatures>;
  /** Text backends: how image and video parts reach the model (absent: they are refused). */
  visualInput?(entry: ModelEntry): VisualInput;
  /** Text backends: the context window GET /models shows (a loaded engine may know it better). */
  contextSize?(entry: ModelEntry, loaded: Engine | undefined): Promise<number>;
  /** Embedding backends: what the model files say about vector size and input limit, without loading them. */
  embeddingShape?(entry: ModelEntry): { dimensions?: number; maxInputTokens?: number };
  /** Speech backends: the voices offered, read without loading the model. */
  listVoices?(entry: ModelEntry): string[];
  /**
   * Speech backends: the default map from the standard's voices (alloy, onyx, ...) to the
   * model's own; `speech.voiceAliases` in the registry overrides entries.
   */
  standardVoiceMap?(entry: ModelEntry, voices: readonly string[]): Record<string, string>;
}

/** The check most local backends share: their model files must be named. */
export function needsFile(what: string): (entry: ModelEntry) => EntryProblem[] {
  return (entry) => (entry.file ? [] : [{ path: "file", message: what }]);
}

/**
 * A `prepare` that imports, once the node listens, the engine modules its models' first load
 * would import. Evaluating transformers.js with onnxruntime's binding holds the event loop about
 * 0.2 s (measured on the 2-core host), which every request and stream in flight at a first
 * load would wait behind; at start nothing waits. Only backends with models in the registry
 * are prepared, so a chat-only node still never loads them.
 */
export function importEngineModules(modules: (entries: readonly ModelEntry[]) => Promise<unknown>[]): NonNullable<BackendDescriptor["prepare"]> {
  return async (_options, entries) => {
    await Promise.all(modules(entries));
    return [];
  };
}

export const alwaysServable = (): { servable: true } => ({ servable: true });
