import { statSync } from "node:fs";
import { formatBytes } from "./formatBytes.js";
import type { ModelEntry, ModelsConfig } from "../config/modelRegistry.js";
import { ApiError, InferenceError, ModelBusyError, ModelNotFoundError, ModelUnavailableError } from "../errors.js";
import {
  chatFeatureProbes,
  engineFactories,
  sharedEngineLoaders,
  speechVoiceListers,
  standardVoiceMaps,
  type EngineFactoryOptions,
  type ProbedChatFeatures,
  type SharedEngineLoader,
} from "../engines/registry.js";
import type { ModelFileStamp } from "../store/modelFileFeatures.js";
import { isServable } from "./isServable.js";
import { STANDARD_MODEL_NAMES, standardModelType } from "./standardModelNames.js";
import { estimateMemory, type MemoryEstimate } from "./estimateMemory.js";
import type { ChatEngine, DecodeStats, Engine, EngineKind, EnginesByKind, SpeechEngine, TranscriptionEngine } from "../engines/types.js";
import type { ExecutionProviderChoice } from "../engines/onnx/resolveExecutionProviders.js";

/** The engine kind that serves each model type. */
export const KIND_OF_TYPE: Partial<Record<ModelEntry["type"], EngineKind>> = { text: "chat", tts: "speech", asr: "transcription", image: "image", video: "video", embedding: "embedding" };

type EngineStats = { busy: number; waiting: number; sequences?: number; workers?: number; decode?: DecodeStats };

export type ModelState = "unloaded" | "loading" | "loaded" | "failed";

export interface ModelStatus {
  id: string;
  type: ModelEntry["type"];
  backend: ModelEntry["backend"];
  state: ModelState;
  /** Why the last load failed (state "failed"). */
  error: string | null;
  /** Estimated memory once loaded; null until estimated (`estimate()`, or the first load). */
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

export interface ModelManagerOptions extends EngineFactoryOptions {
  /** Default keep-alive in seconds (a model's keepAlive overrides): 0 unloads when idle, -1 never. */
  keepAliveSeconds?: number;
  ramBudgetBytes?: number | null;
  vramBudgetBytes?: number | null;
  /** A failed load answers 503 with its cause for this long before a request retries it. */
  retryAfterFailureMs?: number;
  /** How long a load waits for busy models to become idle when the budget is full. */
  loadWaitMs?: number;
  now?: () => number;
  /** Unload failures are logged, never thrown into a request. */
  onError?: (error: unknown, id: string) => void;
  /**
   * A lasting cache of what a model file's header says (chat features), keyed by the file's
   * path, size and modification time: GET /models reads it instead of analysing the chat
   * template again after a restart (the store's model_file_features; absent: memory only).
   */
  fileFeatureCache?: {
    get(stamp: ModelFileStamp): ProbedChatFeatures | undefined;
    put(stamp: ModelFileStamp, features: ProbedChatFeatures): void;
  };
}

/** One loadable unit: a model, or one model shared by several entries (same backend and files). */
interface Slot {
  entries: ModelEntry[];
  shared: SharedEngineLoader<unknown> | undefined;
  state: ModelState;
  failure: ApiError | null;
  failedAt: number;
  loading: Promise<void> | undefined;
  engines: Map<string, Engine>;
  disposeLoaded: (() => Promise<void>) | undefined;
  /** Resolves once the previous unload has released its memory. */
  unloading: Promise<void>;
  inFlight: number;
  loadedAt: number | null;
  lastUsedAt: number | null;
  memory: MemoryEstimate | null;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * Model id -> engine, with a lifecycle: models load on first use (each load on its own
 * promise, so a slow load never holds up another model's requests), unload when idle past
 * their keep-alive, and give way to newer models when the memory budget needs room (least
 * recently used first, never one a request holds). A load that fails answers that model's
 * requests with a 503 naming the cause and is retried after a short back-off.
 */
export class ModelManager {
  private readonly entries = new Map<string, ModelEntry>();
  /** Configured alias -> model id. */
  private readonly aliasIndex = new Map<string, string>();
  private readonly slots = new Map<string, Slot>();
  /** Configured models that cannot run here (an upstream without a base URL): absent from every listing. */
  readonly skipped: { id: string; reason: string }[] = [];
  private readonly probedFeatures = new Map<string, Promise<ProbedChatFeatures | null>>();
  private readonly listeners = new Set<(change: ModelChange) => void>();
  /** Loads waiting for room: woken whenever a model is released or unloaded. */
  private readonly roomWaiters = new Set<() => void>();
  private readonly now: () => number;
  private disposed = false;

  constructor(
    config: ModelsConfig,
    private readonly options: ModelManagerOptions,
  ) {
    this.now = options.now ?? Date.now;
    const byKey = new Map<string, Slot>();
    for (const model of config.models) {
      const check = isServable(model);
      if (!check.servable) {
        this.skipped.push({ id: model.id, reason: check.reason });
        continue;
      }
      this.entries.set(model.id, model);
      for (const alias of model.aliases) this.aliasIndex.set(alias, model.id);
      const shared = sharedEngineLoaders[model.backend as keyof typeof sharedEngineLoaders] as SharedEngineLoader<unknown> | undefined;
      const key = shared ? shared.key(model) : `model:${model.id}`;
      let slot = byKey.get(key);
      if (!slot) {
        slot = {
          entries: [],
          shared,
          state: "unloaded",
          failure: null,
          failedAt: 0,
          loading: undefined,
          engines: new Map(),
          disposeLoaded: undefined,
          unloading: Promise.resolve(),
          inFlight: 0,
          loadedAt: null,
          lastUsedAt: null,
          memory: null,
          idleTimer: undefined,
        };
        byKey.set(key, slot);
      }
      slot.entries.push(model);
      this.slots.set(model.id, slot);
    }
  }

  list(): ModelEntry[] {
    return [...this.entries.values()];
  }

  get(id: string, type?: ModelEntry["type"]): ModelEntry {
    const entry = this.resolve(id, type);
    if (!entry) throw new ModelNotFoundError(id, type);
    return entry;
  }

  /**
   * The model a name means: a model id, else a model's configured alias, else one of the
   * standard's names (tts-1, whisper-1, dall-e-3, ...) for the default model of its type.
   */
  resolve(name: string, type?: ModelEntry["type"]): ModelEntry | undefined {
    const fits = (entry: ModelEntry | undefined) => (entry && (!type || entry.type === type) ? entry : undefined);
    const direct = this.entries.get(name);
    if (direct) return fits(direct);
    const aliased = this.aliasIndex.get(name);
    if (aliased) return fits(this.entries.get(aliased));
    const standardType = standardModelType(name);
    return standardType && (!type || type === standardType) ? this.defaultFor(standardType) : undefined;
  }

  /**
   * Every name other than an id that resolves to a model: the configured aliases, then the
   * standard's names that fall to a default model (a standard name configured as an alias is listed once).
   */
  compatibilityMapping(): { name: string; model: string; type: ModelEntry["type"]; source: "alias" | "standard" }[] {
    const mapping: ReturnType<ModelManager["compatibilityMapping"]> = [...this.aliasIndex].map(([name, id]) => ({ name, model: id, type: this.entries.get(id)!.type, source: "alias" }));
    for (const [name, type] of Object.entries(STANDARD_MODEL_NAMES)) {
      if (this.entries.has(name) || this.aliasIndex.has(name)) continue;
      const entry = this.defaultFor(type);
      if (entry) mapping.push({ name, model: entry.id, type, source: "standard" });
    }
    return mapping;
  }

  /** The names besides its id that a request may use for this model. */
  aliasesOf(entry: ModelEntry): string[] {
    return this.compatibilityMapping()
      .filter((m) => m.model === entry.id)
      .map((m) => m.name);
  }

  /** A speech model's map from other voice names (the standard's alloy, onyx, ...) to its own voices. */
  voiceAliases(entry: ModelEntry): Record<string, string> {
    const mapper = standardVoiceMaps[entry.backend as keyof typeof standardVoiceMaps] as ((e: ModelEntry, voices: readonly string[]) => Record<string, string>) | undefined;
    return { ...mapper?.(entry, this.voices(entry)), ...entry.speech.voiceAliases };
  }

  /**
   * Holds a model's engine for one request, loading it first if needed. Every request path
   * takes a lease and releases it in `finally`: a held model is never unloaded.
   */
  async acquire<K extends EngineKind>(id: string, kind: K): Promise<ModelLease<K>> {
    const entry = this.entries.get(id);
    if (!entry || KIND_OF_TYPE[entry.type] !== kind) throw new ModelNotFoundError(id);
    const slot = this.slots.get(id)!;
    this.hold(slot);
    let engine: Engine;
    try {
      await this.ensureLoaded(slot, id, false);
      engine = slot.engines.get(id)!;
      if (engine.kind !== kind) throw new InferenceError(`The model "${id}" is configured with a backend that does not serve ${kind}`);
    } catch (error) {
      this.letGo(slot);
      throw error;
    }
    let released = false;
    return {
      engine: engine as EnginesByKind[K],
      release: () => {
        if (released) return;
        released = true;
        this.letGo(slot);
      },
    };
  }

  /**
   * The loaded engine of a model, without holding it: for tests and tools that use an
   * engine outside a request. Request paths use `acquire`.
   */
  async engine<K extends EngineKind>(id: string, kind: K): Promise<EnginesByKind[K]> {
    const lease = await this.acquire(id, kind);
    lease.release();
    return lease.engine;
  }

  /** The engine of a model if it has finished loading (never starts a load). */
  loadedEngine(id: string): Engine | undefined {
    const slot = this.slots.get(id);
    return slot?.state === "loaded" ? slot.engines.get(id) : undefined;
  }

  chat(id: string): Promise<ChatEngine> {
    this.get(id, "text");
    return this.engine(id, "chat");
  }

  speech(id: string): Promise<SpeechEngine> {
    this.get(id, "tts");
    return this.engine(id, "speech");
  }

  transcription(id: string): Promise<TranscriptionEngine> {
    this.get(id, "asr");
    return this.engine(id, "transcription");
  }

  /** The voices of a speech model, without loading it (a loaded engine knows best: an upstream's fetched list). */
  voices(entry: ModelEntry): string[] {
    const loaded = this.loadedEngine(entry.id);
    if (loaded?.kind === "speech") return [...loaded.voices()];
    const lister = speechVoiceListers[entry.backend as keyof typeof speechVoiceListers] as ((e: ModelEntry) => string[]) | undefined;
    return lister ? lister(entry) : [];
  }

  /** The model a request falls back to when it names none: the one with the "default" trait, else the first of the type. */
  defaultFor(type: ModelEntry["type"]): ModelEntry | undefined {
    const candidates = this.list().filter((m) => m.type === type);
    return candidates.find((m) => m.traits.includes("default")) ?? candidates[0];
  }

  /**
   * A text model's chat features without loading it: a loaded engine's own, else read from
   * the model file's template (cached per file: analysing a template Hearth does not know
   * takes about a second).
   * Null when the file cannot be read (GET /models then shows the registry's values).
   */
  async chatFeatures(id: string): Promise<ProbedChatFeatures | null> {
    const entry = this.get(id, "text");
    const loaded = this.loadedEngine(id);
    if (loaded?.kind === "chat") return loaded.features;
    const probe = chatFeatureProbes[entry.backend as keyof typeof chatFeatureProbes] as ((e: ModelEntry) => Promise<ProbedChatFeatures>) | undefined;
    if (!probe) return null;
    // Per file (models sharing a GGUF share the probe); models without a file are probed on their own.
    const key = `${entry.backend}:${entry.file ?? `model:${entry.id}`}`;
    let features = this.probedFeatures.get(key);
    if (!features) {
      const stamp = entry.file ? fileStamp(entry.file, entry.backend) : undefined;
      const cache = this.options.fileFeatureCache;
      const cached = stamp && cache?.get(stamp);
      features = cached
        ? Promise.resolve(cached)
        : probe(entry).then(
            (probed) => {
              try {
                if (stamp) cache?.put(stamp, probed);
              } catch {
                // A cache that cannot be written (the store closing) never fails a listing.
              }
              return probed;
            },
            () => {
              this.probedFeatures.delete(key);
              return null;
            },
          );
      this.probedFeatures.set(key, features);
    }
    return features;
  }

  /** Engines that finished loading, with their queue state. */
  async loaded(): Promise<{ id: string; kind: string; stats?: EngineStats }[]> {
    const result: { id: string; kind: string; stats?: EngineStats }[] = [];
    for (const id of this.entries.keys()) {
      const engine = this.loadedEngine(id);
      if (engine) result.push({ id, kind: engine.kind, stats: "stats" in engine ? engine.stats() : undefined });
    }
    return result;
  }

  // -------------------------------------------------------------------------------------
  // Status and administration

  /** Fills in the memory estimate of every model not estimated yet (reads GGUF headers and directory sizes). */
  estimate(): Promise<void> {
    // Once per process: a model whose files cannot be estimated is not re-read on every admin
    // request (its load fills the estimate in, or says what is wrong).
    this.estimating ??= Promise.all(
      [...new Set(this.slots.values())].map(async (slot) => {
        slot.memory ??= await estimateMemory(slot.entries[0]!, this.options.gpu).catch(() => null);
      }),
    ).then(() => undefined);
    return this.estimating;
  }
  private estimating: Promise<void> | undefined;

  status(): { models: ModelStatus[]; budget: MemoryBudgetStatus } {
    const models = [...this.entries.values()].map((entry) => this.statusOf(entry));
    return { models, budget: this.budget() };
  }

  statusOf(idOrEntry: string | ModelEntry): ModelStatus {
    const entry = typeof idOrEntry === "string" ? this.get(idOrEntry) : idOrEntry;
    const slot = this.slots.get(entry.id)!;
    const engine = slot.state === "loaded" ? slot.engines.get(entry.id) : undefined;
    const stats = engine && "stats" in engine ? engine.stats() : undefined;
    const keepAlive = this.keepAliveOf(slot);
    return {
      id: entry.id,
      type: entry.type,
      backend: entry.backend,
      state: slot.state,
      error: slot.state === "failed" ? (slot.failure?.message ?? null) : null,
      memory: slot.memory ? { ...slot.memory } : null,
      inFlight: slot.inFlight,
      queue: stats ? { busy: stats.busy, waiting: stats.waiting } : null,
      decode: stats && "decode" in stats ? (stats.decode ?? null) : null,
      loadedAt: slot.loadedAt,
      lastUsedAt: slot.lastUsedAt,
      keepAliveSeconds: keepAlive === Infinity ? -1 : keepAlive,
      sharedWith: slot.entries.filter((e) => e.id !== entry.id).map((e) => e.id),
      executionProvider: engine?.executionProvider ? { ...engine.executionProvider, providers: [...engine.executionProvider.providers] } : null,
    };
  }

  budget(): MemoryBudgetStatus {
    const used = this.usage();
    return {
      ram: { limitBytes: this.options.ramBudgetBytes ?? null, usedBytes: used.ramBytes },
      vram: { limitBytes: this.options.vramBudgetBytes ?? null, usedBytes: used.vramBytes },
    };
  }

  /** Called on every state change (and every lease taken or released); returns the unsubscribe function. */
  onChange(listener: (change: ModelChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Loads a model now (an admin's warm-up); a failed model is retried at once. */
  async load(id: string): Promise<ModelStatus> {
    this.get(id);
    const slot = this.slots.get(id)!;
    this.hold(slot);
    try {
      await this.ensureLoaded(slot, id, true);
    } finally {
      this.letGo(slot);
    }
    return this.statusOf(id);
  }

  /** Unloads a model now; 409 while requests hold it or it is loading. */
  async unload(id: string): Promise<ModelStatus> {
    this.get(id);
    const slot = this.slots.get(id)!;
    const ids = slot.entries.map((e) => e.id).join(", ");
    if (slot.state === "loading") throw new ModelBusyError(`The model "${id}" is loading; unload it once it has loaded`);
    if (slot.inFlight > 0) throw new ModelBusyError(`The model "${id}" is serving ${slot.inFlight} request(s)${slot.entries.length > 1 ? ` (it is shared by ${ids})` : ""}; unload it once they finish`);
    if (slot.state === "failed") {
      slot.state = "unloaded";
      slot.failure = null;
      this.emit(slot, "unloaded");
    }
    await this.unloadSlot(slot, "unloaded");
    return this.statusOf(id);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const slots = [...new Set(this.slots.values())];
    await Promise.all(slots.map((slot) => slot.loading?.catch(() => undefined)));
    await Promise.all(slots.map((slot) => this.unloadSlot(slot, "unloaded")));
    this.listeners.clear();
  }

  // -------------------------------------------------------------------------------------
  // Lifecycle

  private hold(slot: Slot): void {
    slot.inFlight++;
    slot.lastUsedAt = this.now();
    clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    this.emit(slot, "acquired");
  }

  private letGo(slot: Slot): void {
    slot.inFlight--;
    slot.lastUsedAt = this.now();
    this.emit(slot, "released");
    if (slot.inFlight === 0) {
      this.wakeRoomWaiters();
      this.scheduleIdleUnload(slot);
    }
  }

  private ensureLoaded(slot: Slot, id: string, retryNow: boolean): Promise<void> {
    if (this.disposed) return Promise.reject(new ModelUnavailableError(id, "the server is shutting down"));
    if (slot.state === "loaded") return Promise.resolve();
    if (slot.state === "loading") {
      return slot.loading!.catch((error: unknown) => Promise.reject(error instanceof MemoryBudgetFullError ? new MemoryBudgetFullError(id, error.causeText) : this.failureFor(slot, id)));
    }
    if (slot.state === "failed" && !retryNow && this.now() - slot.failedAt < (this.options.retryAfterFailureMs ?? 5_000)) {
      return Promise.reject(this.failureFor(slot, id));
    }
    slot.loading = this.loadSlot(slot).finally(() => (slot.loading = undefined));
    return slot.loading.catch((error: unknown) => Promise.reject(error instanceof MemoryBudgetFullError ? error : this.failureFor(slot, id)));
  }

  /** The error a request for `id` gets while its model is failed (named after the model asked for). */
  private failureFor(slot: Slot, id: string): ApiError {
    const failure = slot.failure ?? new ModelUnavailableError(id, "unknown error");
    if (failure instanceof ModelUnavailableError && failure.modelId !== id) return new ModelUnavailableError(id, failure.causeText);
    return failure;
  }

  private async loadSlot(slot: Slot): Promise<void> {
    const entry = slot.entries[0]!;
    slot.state = "loading";
    slot.failure = null;
    this.emit(slot, "loading");
    try {
      await slot.unloading;
      const budgeted = this.options.ramBudgetBytes != null || this.options.vramBudgetBytes != null;
      try {
        slot.memory ??= await estimateMemory(entry, this.options.gpu);
      } catch (error) {
        // Without a budget the load itself says best what is wrong with the files.
        if (budgeted) throw error;
      }
      if (budgeted) await this.makeRoom(slot);
      if (slot.shared) {
        const shared = await slot.shared.load(entry, { gpu: this.options.gpu });
        for (const e of slot.entries) slot.engines.set(e.id, slot.shared.view(shared, e));
        const loader = slot.shared;
        slot.disposeLoaded = () => loader.dispose(shared);
      } else {
        const factory = engineFactories[entry.backend] as (entry: ModelEntry, options: EngineFactoryOptions) => Promise<Engine>;
        const engine = await factory(entry, { gpu: this.options.gpu });
        slot.engines.set(entry.id, engine);
        slot.disposeLoaded = () => engine.dispose();
      }
      if (this.disposed) {
        await slot.disposeLoaded();
        throw new Error("the server is shutting down");
      }
      slot.state = "loaded";
      slot.loadedAt = this.now();
      this.emit(slot, "loaded");
      if (slot.inFlight === 0) this.scheduleIdleUnload(slot);
    } catch (error) {
      slot.engines.clear();
      slot.disposeLoaded = undefined;
      if (error instanceof MemoryBudgetFullError) {
        // Nothing is wrong with the model: the next request tries again at once.
        slot.state = "unloaded";
        this.emit(slot, "unloaded");
        this.wakeRoomWaiters();
        throw error;
      }
      slot.state = "failed";
      slot.failedAt = this.now();
      slot.failure = error instanceof ApiError ? error : new ModelUnavailableError(entry.id, (error as Error).message ?? String(error));
      this.emit(slot, "failed");
      this.wakeRoomWaiters();
      throw slot.failure;
    }
  }

  /**
   * Unloads idle models, least recently used first, until the slot's estimate fits both
   * budgets. Models in use are never unloaded: when only they stand in the way, the load
   * waits (up to loadWaitMs) for one to become idle, then fails with a 503 saying so.
   */
  private async makeRoom(slot: Slot): Promise<void> {
    const id = slot.entries[0]!.id;
    const need = slot.memory ?? { ramBytes: 0, vramBytes: 0 };
    const ram = this.options.ramBudgetBytes ?? Infinity;
    const vram = this.options.vramBudgetBytes ?? Infinity;
    if (need.ramBytes > ram) throw new ModelUnavailableError(id, `it needs about ${formatBytes(need.ramBytes)} of RAM and the RAM budget is ${formatBytes(ram)}`);
    if (need.vramBytes > vram) throw new ModelUnavailableError(id, `it needs about ${formatBytes(need.vramBytes)} of GPU memory and the VRAM budget is ${formatBytes(vram)}`);
    const deadline = Date.now() + (this.options.loadWaitMs ?? 30_000);
    for (;;) {
      const used = this.usage(slot);
      if (used.ramBytes + need.ramBytes <= ram && used.vramBytes + need.vramBytes <= vram) return;
      const victim = [...new Set(this.slots.values())]
        .filter((s) => s !== slot && s.state === "loaded" && s.inFlight === 0)
        .sort((a, b) => (a.lastUsedAt ?? 0) - (b.lastUsedAt ?? 0))[0];
      if (victim) {
        await this.unloadSlot(victim, "evicted");
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        const busy = [...new Set(this.slots.values())].filter((s) => s !== slot && (s.state === "loaded" || s.state === "loading"));
        const names = busy.map((s) => s.entries.map((e) => e.id).join("+")).join(", ");
        throw new MemoryBudgetFullError(id, `the memory budget is full and the models holding it (${names}) are busy; try again shortly`);
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.roomWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.roomWaiters.add(done);
      });
    }
  }

  private async unloadSlot(slot: Slot, reason: "unloaded" | "evicted" | "idle"): Promise<void> {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    if (slot.state !== "loaded") return;
    const dispose = slot.disposeLoaded;
    slot.state = "unloaded";
    slot.engines.clear();
    slot.disposeLoaded = undefined;
    slot.loadedAt = null;
    slot.unloading = (dispose ? dispose() : Promise.resolve()).catch((error: unknown) => this.options.onError?.(error, slot.entries[0]!.id));
    this.emit(slot, reason);
    await slot.unloading;
    this.wakeRoomWaiters();
  }

  private scheduleIdleUnload(slot: Slot): void {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    if (slot.state !== "loaded" || this.disposed) return;
    const seconds = this.keepAliveOf(slot);
    if (seconds === Infinity) return;
    slot.idleTimer = setTimeout(() => {
      if (slot.inFlight === 0) void this.unloadSlot(slot, "idle");
    }, seconds * 1000);
    slot.idleTimer.unref();
  }

  /** The longest keep-alive among the entries sharing the slot; -1 is forever. */
  private keepAliveOf(slot: Slot): number {
    const fallback = this.options.keepAliveSeconds ?? 300;
    return Math.max(...slot.entries.map((e) => {
      const seconds = e.keepAlive ?? fallback;
      return seconds < 0 ? Infinity : seconds;
    }));
  }

  /** Estimated memory of the loaded and loading models (except `besides`). */
  private usage(besides?: Slot): MemoryEstimate {
    const total = { ramBytes: 0, vramBytes: 0 };
    for (const slot of new Set(this.slots.values())) {
      if (slot === besides || (slot.state !== "loaded" && slot.state !== "loading") || !slot.memory) continue;
      total.ramBytes += slot.memory.ramBytes;
      total.vramBytes += slot.memory.vramBytes;
    }
    return total;
  }

  private wakeRoomWaiters(): void {
    for (const wake of [...this.roomWaiters]) {
      this.roomWaiters.delete(wake);
      wake();
    }
  }

  private emit(slot: Slot, reason: ModelChange["reason"]): void {
    const change: ModelChange = { ids: slot.entries.map((e) => e.id), state: slot.state, reason };
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (error) {
        this.options.onError?.(error, change.ids[0]!);
      }
    }
  }
}

/** The budget has no room now because every loaded model is in use (transient: not a failure of the model). */
class MemoryBudgetFullError extends ModelUnavailableError {}

/** A file's identity for the feature cache; undefined when it cannot be read (the probe then says why). */
function fileStamp(path: string, backend: string): ModelFileStamp | undefined {
  try {
    const stats = statSync(path);
    return { path, backend, size: stats.size, mtimeMs: stats.mtimeMs };
  } catch {
    return undefined;
  }
}
