import type { ModelEntry } from "../config/modelRegistry.js";
import type { MemoryEstimate } from "../engines/BackendDescriptor.js";
import type { ExecutionProviderChoice } from "../engines/onnx/resolveExecutionProviders.js";
import type { DecodeStats, EngineKind, EnginesByKind } from "../engines/types.js";
import type { ReplicaStatus } from "../engines/upstream/ReplicaPool.js";

/** What the model lifecycle reports: each model's state, the memory budget, state changes, and the lease a request holds. */

/** The engine kind that serves each model type. */
export const KIND_OF_TYPE: Partial<Record<ModelEntry["type"], EngineKind>> = {
  text: "chat",
  tts: "speech",
  asr: "transcription",
  image: "image",
  // An inpainting export is a diffusion model too: the same engine, serving edits.
  inpaint: "image",
  video: "video",
  embedding: "embedding",
  upscale: "upscale",
  "background-removal": "background",
  music: "music",
};

export type ModelState = "unloaded" | "loading" | "loaded" | "failed";

export interface ModelStatus {
  id: string;
  type: ModelEntry["type"];
  backend: ModelEntry["backend"];
  state: ModelState;
  /** Why the last load failed (state "failed"). */
  error: string | null;
  /** Memory once loaded: what a loaded engine reports it holds where it can say, else the estimate; null until either is known (a load, a load under a memory budget, or `estimate()`: the admin listing). */
  memory: MemoryEstimate | null;
  /** Requests holding the model now (leases not yet released). */
  inFlight: number;
  /** The loaded engine's own queue: requests running and waiting for a slot. */
  queue: { busy: number; waiting: number } | null;
  /** A loaded llama.cpp chat model's decode calls: how many, how full, how its generating sequences kept step. */
  decode: DecodeStats | null;
  loadedAt: number | null;
  lastUsedAt: number | null;
  /** -1: never unloaded for idleness. */
  keepAliveSeconds: number;
  /** Other models served by the same loaded model (an image and a video entry on one directory). */
  sharedWith: string[];
  /** A loaded ONNX model: where onnxruntime runs it and why; null otherwise. */
  executionProvider: ExecutionProviderChoice | null;
  /** A loaded upstream model: each replica of its pool (one for a single base URL); null otherwise. */
  replicas: ReplicaStatus[] | null;
}

export interface MemoryBudgetStatus {
  ram: { limitBytes: number | null; usedBytes: number };
  vram: { limitBytes: number | null; usedBytes: number };
}

export interface ModelChange {
  /** The models whose state changed (several when they share a loaded model). */
  ids: string[];
  state: ModelState;
  reason: "loading" | "loaded" | "failed" | "unloaded" | "evicted" | "idle" | "acquired" | "released";
}

/** An engine held by one request: the model is not unloaded until `release()` (idempotent). */
export interface ModelLease<K extends EngineKind = EngineKind> {
  readonly engine: EnginesByKind[K];
  release(): void;
}
