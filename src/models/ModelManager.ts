import type { ModelEntry, ModelsConfig } from "../config.js";
import { ApiError, ModelNotFoundError, ModelUnavailableError } from "../errors.js";
import { chatEngineFactories, chatFeatureProbes, type EngineFactoryOptions, type ProbedChatFeatures } from "../engines/registry.js";
import type { ChatEngine } from "../engines/types.js";

/**
 * Model id -> engine. Engines load on first use; a load that fails answers that model's
 * requests with a 503 naming the cause and is retried on the next request.
 */
export class ModelManager {
  private readonly entries: Map<string, ModelEntry>;
  private readonly chatEngines = new Map<string, Promise<ChatEngine>>();
  /** Engines that finished loading (the same engines as chatEngines, without waiting). */
  private readonly readyEngines = new Map<string, ChatEngine>();
  private readonly probedFeatures = new Map<string, Promise<ProbedChatFeatures | null>>();

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

  chat(id: string): Promise<ChatEngine> {
    const entry = this.get(id, "text");
    let engine = this.chatEngines.get(id);
    if (!engine) {
      engine = chatEngineFactories[entry.backend](entry, this.options).then(
        (ready) => {
          this.readyEngines.set(id, ready);
          return ready;
        },
        (error: unknown) => {
          this.chatEngines.delete(id);
          throw error instanceof ApiError ? error : new ModelUnavailableError(id, (error as Error).message);
        },
      );
      this.chatEngines.set(id, engine);
    }
    return engine;
  }

  /**
   * A text model's chat features without loading it: a loaded engine's own, else read from
   * the model file's template (cached per file: analysing a Jinja template takes seconds).
   * Null when the file cannot be read (GET /models then shows the registry's values).
   */
  async chatFeatures(id: string): Promise<ProbedChatFeatures | null> {
    const entry = this.get(id, "text");
    const loaded = this.readyEngines.get(id);
    if (loaded) return loaded.features;
    const key = `${entry.backend}:${entry.file}`;
    let features = this.probedFeatures.get(key);
    if (!features) {
      features = chatFeatureProbes[entry.backend](entry).catch(() => {
        this.probedFeatures.delete(key);
        return null;
      });
      this.probedFeatures.set(key, features);
    }
    return features;
  }

  /** Engines that finished loading, with their queue state. */
  async loaded(): Promise<{ id: string; stats: ReturnType<ChatEngine["stats"]> }[]> {
    const result: { id: string; stats: ReturnType<ChatEngine["stats"]> }[] = [];
    for (const [id, promise] of this.chatEngines) {
      const engine = await promise.catch(() => undefined);
      if (engine) result.push({ id, stats: engine.stats() });
    }
    return result;
  }

  async dispose(): Promise<void> {
    const engines = [...this.chatEngines.values()];
    this.chatEngines.clear();
    this.readyEngines.clear();
    await Promise.all(engines.map(async (p) => (await p.catch(() => undefined))?.dispose()));
  }
}

