import type { ModelEntry, ModelsConfig } from "../config.js";
import { ApiError, InferenceError, ModelNotFoundError, ModelUnavailableError } from "../errors.js";
import { chatFeatureProbes, engineFactories, speechVoiceListers, type EngineFactoryOptions, type ProbedChatFeatures } from "../engines/registry.js";
import { isServable } from "./isServable.js";
import type { ChatEngine, Engine, EngineKind, EnginesByKind, SpeechEngine, TranscriptionEngine } from "../engines/types.js";

/** The engine kind that serves each model type. */
const KIND_OF_TYPE: Partial<Record<ModelEntry["type"], EngineKind>> = { text: "chat", tts: "speech", asr: "transcription", image: "image", video: "video", embedding: "embedding" };

type EngineStats = { busy: number; waiting: number; sequences?: number; workers?: number };

/**
 * Model id -> engine. Engines load on first use; a load that fails answers that model's
 * requests with a 503 naming the cause and is retried on the next request.
 */
export class ModelManager {
  private readonly entries: Map<string, ModelEntry>;
  private readonly engines = new Map<string, Promise<Engine>>();
  /** Engines whose load finished, for synchronous questions (voices). */
  private readonly ready = new Map<string, Engine>();
  /** Configured models that cannot run here (an upstream without a base URL): absent from every listing. */
  readonly skipped: { id: string; reason: string }[] = [];
  private readonly probedFeatures = new Map<string, Promise<ProbedChatFeatures | null>>();

  constructor(
    config: ModelsConfig,
    private readonly options: EngineFactoryOptions,
  ) {
    this.entries = new Map();
    for (const model of config.models) {
      const check = isServable(model);
      if (check.servable) this.entries.set(model.id, model);
      else this.skipped.push({ id: model.id, reason: check.reason });
    }
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
          this.ready.delete(id);
          throw error instanceof ApiError ? error : new ModelUnavailableError(id, (error as Error).message);
        },
      );
      this.engines.set(id, engine);
      engine.then((loaded) => this.ready.set(id, loaded)).catch(() => undefined);
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
    const loaded = this.ready.get(entry.id);
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
   * the model file's template (cached per file: analysing a Jinja template takes seconds).
   * Null when the file cannot be read (GET /models then shows the registry's values).
   */
  async chatFeatures(id: string): Promise<ProbedChatFeatures | null> {
    const entry = this.get(id, "text");
    const loaded = this.ready.get(id);
    if (loaded?.kind === "chat") return loaded.features;
    const probe = chatFeatureProbes[entry.backend as keyof typeof chatFeatureProbes] as ((e: ModelEntry) => Promise<ProbedChatFeatures>) | undefined;
    if (!probe) return null;
    // Per file (models sharing a GGUF share the probe); models without a file are probed on their own.
    const key = `${entry.backend}:${entry.file ?? `model:${entry.id}`}`;
    let features = this.probedFeatures.get(key);
    if (!features) {
      features = probe(entry).catch(() => {
        this.probedFeatures.delete(key);
        return null;
      });
      this.probedFeatures.set(key, features);
    }
    return features;
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

