import { formatBytes } from "./formatBytes.js";
import type { ModelEntry } from "../config/modelRegistry.js";
import { ApiError, InferenceError, ModelBusyError, ModelNotFoundError, ModelUnavailableError } from "../errors.js";
import { backendOf, type BackendNotice, type EngineFactoryOptions, type SharedEngineLoader } from "../engines/registry.js";
import type { Engine, EngineKind, EnginesByKind } from "../engines/types.js";
import { estimateMemory, type MemoryEstimate } from "./estimateMemory.js";
import type { ModelFileStamp } from "../store/modelFileFeatures.js";
import { fileStamp } from "./fileStamp.js";
import type { ModelRegistry } from "./ModelRegistry.js";
import { KIND_OF_TYPE, type MemoryBudgetStatus, type ModelChange, type ModelLease, type ModelState, type ModelStatus } from "./ModelStatus.js";

export interface ModelLifecycleOptions extends EngineFactoryOptions {
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
  /** Where memory figures outlive the process (the store's model_memory_figures); absent: this process only. */
  memoryFigures?: MemoryFigureCache;
}

/**
 * A lasting cache of models' memory figures, per file (path, size, modification time) and per
 * the backend's `memoryKey`: a GGUF estimate simulates the load in llama.cpp, and a loaded model's
 * own report is the same figure, so a later start reads either instead of simulating again.
 */
export interface MemoryFigureCache {
  get(stamp: ModelFileStamp, settingsKey: string): MemoryEstimate | undefined;
  put(stamp: ModelFileStamp, settingsKey: string, figure: MemoryEstimate): void;
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
 * The lifecycle of the registry's models: they load on first use (each load on its own
 * promise, so a slow load never holds up another model's requests), unload when idle past
 * their keep-alive, and give way to newer models when the memory budget needs room (least
 * recently used first, never one a request holds). A load that fails answers that model's
 * requests with a 503 naming the cause and is retried after a short back-off. Every time
 * (lastUsedAt, keep-alive, back-off, the wait for room) is read from the injected clock.
 */
export class ModelLifecycle {
  private readonly slots = new Map<string, Slot>();
  private readonly listeners = new Set<(change: ModelChange) => void>();
  /** Loads waiting for room: woken whenever a model is released or unloaded. */
  private readonly roomWaiters = new Set<() => void>();
  private readonly now: () => number;
  private disposed = false;

  constructor(
    private readonly registry: ModelRegistry,
    private readonly options: ModelLifecycleOptions,
  ) {
    this.now = options.now ?? Date.now;
    const byKey = new Map<string, Slot>();
    for (const model of registry.list()) {
      const shared = backendOf(model).shared as SharedEngineLoader<unknown> | undefined;
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

  /**
   * Holds a model's engine for one request, loading it first if needed. Every request path
   * takes a lease and releases it in `finally`: a held model is never unloaded.
   */
  async acquire<K extends EngineKind>(id: string, kind: K): Promise<ModelLease<K>> {
    const entry = this.registry.byId(id);
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

  /** The engine of a model if it has finished loading (never starts a load). */
  loadedEngine(id: string): Engine | undefined {
    const slot = this.slots.get(id);
    return slot?.state === "loaded" ? slot.engines.get(id) : undefined;
  }

  /**
   * Prepares each backend of the registry's models (BackendDescriptor.prepare) so that first loads
   * need not; a failure is left for the load to report. Resolves when all are done, with what the
   * backends had to say.
   */
  prepareBackends(): Promise<BackendNotice[]> {
    const entries = this.registry.list();
    const backends = new Set(entries.map((entry) => backendOf(entry)));
    return Promise.all(
      [...backends].map((backend) =>
        backend
          .prepare?.(
            { gpu: this.options.gpu },
            entries.filter((entry) => backendOf(entry) === backend),
          )
          .catch(() => undefined),
      ),
    ).then((notices) => notices.flatMap((n) => n ?? []));
  }

  /**
   * Fills in the memory estimate of every model not estimated yet (reads GGUF headers and
   * directory sizes). A model that was loaded already has its engine's own figure.
   */
  estimate(): Promise<void> {
    // Once per process: a model whose files cannot be estimated is not re-read on every admin
    // request (its load says what is wrong; under a budget the load estimates it again).
    this.estimating ??= Promise.all(
      [...new Set(this.slots.values())].map(async (slot) => {
        slot.memory ??= await this.memoryFigure(slot.entries[0]!).catch(() => null);
      }),
    ).then(() => undefined);
    return this.estimating;
  }
  private estimating: Promise<void> | undefined;

  /** A model's memory figure: the store's for this file and settings where it has one, else estimated (and kept). */
  private async memoryFigure(entry: ModelEntry): Promise<MemoryEstimate> {
    const where = await this.memoryFigureKey(entry);
    const kept = where && this.options.memoryFigures!.get(where.stamp, where.key);
    if (kept) return kept;
    const figure = await estimateMemory(entry, this.options.gpu);
    if (where) this.options.memoryFigures!.put(where.stamp, where.key, figure);
    return figure;
  }

  /** Keeps a loaded model's own figure for later starts (it supersedes an estimate for the same settings). */
  private async keepMemoryFigure(entry: ModelEntry, figure: MemoryEstimate): Promise<void> {
    try {
      const where = await this.memoryFigureKey(entry);
      if (where) this.options.memoryFigures!.put(where.stamp, where.key, figure);
    } catch (error) {
      this.options.onError?.(error, entry.id);
    }
  }

  /** Where the store keeps an entry's figure, or undefined where it keeps none (no store, no key, no file). */
  private async memoryFigureKey(entry: ModelEntry): Promise<{ stamp: ModelFileStamp; key: string } | undefined> {
    if (!this.options.memoryFigures || !entry.file) return undefined;
    const key = await backendOf(entry).memoryKey?.(entry, this.options.gpu);
    if (key === undefined) return undefined;
    const stamp = fileStamp(entry.file, entry.backend);
    return stamp && { stamp, key };
  }

  /** What a loaded slot's engine reports it holds, or null where it cannot say. */
  private memoryInUse(slot: Slot): MemoryEstimate | null {
    if (slot.shared) return null;
    const engine = slot.engines.get(slot.entries[0]!.id);
    try {
      return engine?.memoryInUse?.() ?? null;
    } catch {
      return null;
    }
  }

  status(): { models: ModelStatus[]; budget: MemoryBudgetStatus } {
    const models = this.registry.list().map((entry) => this.statusOf(entry));
    return { models, budget: this.budget() };
  }

  statusOf(idOrEntry: string | ModelEntry): ModelStatus {
    const entry = typeof idOrEntry === "string" ? this.registry.get(idOrEntry) : idOrEntry;
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
      replicas: engine?.replicaPool?.status() ?? null,
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
    this.registry.get(id);
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
    this.registry.get(id);
    const slot = this.slots.get(id)!;
    const ids = slot.entries.map((e) => e.id).join(", ");
    if (slot.state === "loading") throw new ModelBusyError(`The model "${id}" is loading; unload it once it has loaded`);
    if (slot.inFlight > 0)
      throw new ModelBusyError(`The model "${id}" is serving ${slot.inFlight} request(s)${slot.entries.length > 1 ? ` (it is shared by ${ids})` : ""}; unload it once they finish`);
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
    // An estimate under way runs llama.cpp on the shared backend: let it finish first.
    await this.estimating;
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
      return slot.loading!.catch((error: unknown) =>
        Promise.reject(error instanceof MemoryBudgetFullError ? new MemoryBudgetFullError(id, error.causeText) : this.failureFor(slot, id)),
      );
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
      // The estimate decides evictions, so a budgeted load waits for it. Without a budget it is only
      // reported: a loaded model's engine reports what it holds (below), and models not loaded are
      // estimated when asked (`estimate()`: the admin listing, the console). For GGUF the estimate
      // parses the whole header into JavaScript and simulates the load in llama.cpp, about 0.4 s and,
      // on the Qwen2.5-0.5B shape, 90 MB of resident memory that the heaps keep afterwards.
      if (budgeted) {
        slot.memory ??= await this.memoryFigure(entry);
        await this.makeRoom(slot);
      }
      if (slot.shared) {
        const shared = await slot.shared.load(entry, { gpu: this.options.gpu });
        for (const e of slot.entries) slot.engines.set(e.id, slot.shared.view(shared, e));
        const loader = slot.shared;
        slot.disposeLoaded = () => loader.dispose(shared);
      } else {
        const engine = await backendOf(entry).load(entry, { gpu: this.options.gpu });
        slot.engines.set(entry.id, engine);
        slot.disposeLoaded = () => engine.dispose();
      }
      if (this.disposed) {
        await slot.disposeLoaded();
        throw new Error("the server is shutting down");
      }
      // A loaded model's own report is the figure the estimate predicts, without the estimate's
      // cost (for GGUF a simulated second load, whose memory stays with the process).
      const inUse = this.memoryInUse(slot);
      if (inUse) void this.keepMemoryFigure(entry, inUse);
      slot.memory ??= inUse;
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
    // A real wait on a real timer, so its deadline is on the monotonic clock: the injected clock
    // orders eviction and keep-alive, and a frozen one in a test must not make this wait forever.
    const deadline = performance.now() + (this.options.loadWaitMs ?? 30_000);
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
      const left = deadline - performance.now();
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
    // The timer wakes the check; the injected clock decides whether the keep-alive has passed.
    const idleSince = () => Math.max(slot.lastUsedAt ?? 0, slot.loadedAt ?? 0);
    slot.idleTimer = setTimeout(
      () => {
        slot.idleTimer = undefined;
        if (slot.inFlight > 0) return;
        const left = seconds * 1000 - (this.now() - idleSince());
        if (left > 0) this.scheduleIdleUnload(slot);
        else void this.unloadSlot(slot, "idle");
      },
      Math.max(0, seconds * 1000 - (this.now() - idleSince())),
    );
    slot.idleTimer.unref();
  }

  /** The longest keep-alive among the entries sharing the slot; -1 is forever. */
  private keepAliveOf(slot: Slot): number {
    const fallback = this.options.keepAliveSeconds ?? 300;
    return Math.max(
      ...slot.entries.map((e) => {
        const seconds = e.keepAlive ?? fallback;
        return seconds < 0 ? Infinity : seconds;
      }),
    );
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
