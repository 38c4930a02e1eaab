import type { ModelEntry, ModelsConfig } from "../config.js";
import { ApiError, InferenceError, ModelNotFoundError, ModelUnavailableError } from "../errors.js";
import { engineFactories, type EngineFactoryOptions } from "../engines/registry.js";
import type { ChatEngine, Engine, EngineKind, EnginesByKind } from "../engines/types.js";

/** The engine kind that serves each model type. */
const KIND_OF_TYPE: Partial<Record<ModelEntry["type"], EngineKind>> = { text: "chat", image: "image", video: "video", embedding: "embedding" };

type EngineStats = { busy: number; waiting: number; sequences?: number; workers?: number };

/**
 * Model id -> engine. Engines load on first use; a load that fails answers that model's
 * requests with a 503 naming the cause and is retried on the next request.
 */
export class ModelManager {
  private readonly entries: Map<string, ModelEntry>;
  private readonly engines = new Map<string, Promise<Engine>>();
  /** Engines whose load finished, for synchronous lookups (what GET /models reports of them). */
  private readonly ready = new Map<string, Engine>();

  constructor(
    config: ModelsConfig,
    private readonly options: EngineFactoryOptions,
  ) {
    this.entries = new Map(config.models.map((m) => [m.id, m]));
  }

  list(): ModelEntry[] {
    return [...this.entries.values()];
  }

  get(id: string, type?: ModelEntry["type"]): ModelEntry {
    const entry = this.entries.get(id);
    if (!entry || (type && entry.type !== type)) throw new ModelNotFoundError(id, type);
    return entry;
  }

  /** The loaded engine of a model of the given kind (404 if the id names no such model). */
  async engine<K extends EngineKind>(id: string, kind: K): Promise<EnginesByKind[K]> {
    const entry = this.entries.get(id);
    if (!entry || KIND_OF_TYPE[entry.type] !== kind) throw new ModelNotFoundError(id);
    let engine = this.engines.get(id);
    if (!engine) {
      const factory = engineFactories[entry.backend] as (entry: ModelEntry, options: EngineFactoryOptions) => Promise<Engine>;
      engine = factory(entry, this.options).then(
        (loaded) => {
          this.ready.set(id, loaded);
          return loaded;
        },
        (error: unknown) => {
          this.engines.delete(id);
          throw error instanceof ApiError ? error : new ModelUnavailableError(id, (error as Error).message);
        },
      );
      this.engines.set(id, engine);
    }
    const loaded = await engine;
    if (loaded.kind !== kind) throw new InferenceError(`The model "${id}" is configured with a backend that does not serve ${kind}`);
    return loaded as EnginesByKind[K];
  }

  /** The engine of a model if it has finished loading (never starts a load). */
  loadedEngine(id: string): Engine | undefined {
    return this.ready.get(id);
  }

  chat(id: string): Promise<ChatEngine> {
    this.get(id, "text");
    return this.engine(id, "chat");
  }

  /** Engines that finished loading, with their queue state. */
  async loaded(): Promise<{ id: string; kind: string; stats?: EngineStats }[]> {
    const result: { id: string; kind: string; stats?: EngineStats }[] = [];
    for (const [id, promise] of this.engines) {
      const engine = await promise.catch(() => undefined);
      if (engine) result.push({ id, kind: engine.kind, stats: "stats" in engine ? engine.stats() : undefined });
    }
    return result;
  }

  async dispose(): Promise<void> {
    const engines = [...this.engines.values()];
    this.engines.clear();
    this.ready.clear();
    await Promise.all(engines.map(async (p) => (await p.catch(() => undefined))?.dispose()));
  }
}
