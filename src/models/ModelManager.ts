import type { ModelEntry, ModelsConfig } from "../config/modelRegistry.js";
import { backendOf, type BackendNotice, type ProbedChatFeatures, type VisualInput } from "../engines/registry.js";
import type { Engine, EngineKind } from "../engines/types.js";
import { ModelDescriptions, type FileFeatureCache } from "./ModelDescriptions.js";
import { ModelLifecycle, type ModelLifecycleOptions } from "./ModelLifecycle.js";
import type { MemoryBudgetStatus, ModelChange, ModelLease, ModelStatus } from "./ModelStatus.js";
import { ModelRegistry, type CompatibilityName } from "./ModelRegistry.js";

export { KIND_OF_TYPE, type MemoryBudgetStatus, type ModelChange, type ModelLease, type ModelState, type ModelStatus } from "./ModelStatus.js";

export interface ModelManagerOptions extends ModelLifecycleOptions {
  fileFeatureCache?: FileFeatureCache;
}

/**
 * The one object routes and services hold: the registry (names -> entries), the lifecycle
 * (leases, loading, memory budget, keep-alive, eviction) and the descriptions (what GET
 * /models shows without loading a model). Each method hands over to one of the three.
 */
export class ModelManager {
  private readonly registry: ModelRegistry;
  private readonly lifecycle: ModelLifecycle;
  private readonly descriptions: ModelDescriptions;

  constructor(config: ModelsConfig, options: ModelManagerOptions) {
    this.registry = new ModelRegistry(config);
    this.lifecycle = new ModelLifecycle(this.registry, options);
    this.descriptions = new ModelDescriptions(this.registry, this.lifecycle, options.fileFeatureCache);
  }

  // Registry -------------------------------------------------------------------------------

  /** Configured models that cannot run here (an upstream without a base URL): absent from every listing. */
  get skipped(): readonly { id: string; reason: string }[] {
    return this.registry.skipped;
  }

  list(): ModelEntry[] {
    return this.registry.list();
  }

  get(id: string, type?: ModelEntry["type"]): ModelEntry {
    return this.registry.get(id, type);
  }

  resolve(name: string, type?: ModelEntry["type"]): ModelEntry | undefined {
    return this.registry.resolve(name, type);
  }

  compatibilityMapping(): CompatibilityName[] {
    return this.registry.compatibilityMapping();
  }

  aliasesOf(entry: ModelEntry): string[] {
    return this.registry.aliasesOf(entry);
  }

  defaultFor(type: ModelEntry["type"]): ModelEntry | undefined {
    return this.registry.defaultFor(type);
  }

  // Lifecycle ------------------------------------------------------------------------------

  /**
   * Holds a model's engine for one request, loading it first if needed. Every request path
   * takes a lease and releases it in `finally`: a held model is never unloaded.
   */
  acquire<K extends EngineKind>(id: string, kind: K): Promise<ModelLease<K>> {
    return this.lifecycle.acquire(id, kind);
  }

  /** The engine of a model if it has finished loading (never starts a load). */
  loadedEngine(id: string): Engine | undefined {
    return this.lifecycle.loadedEngine(id);
  }

  /** Does ahead what every first load of a backend's models would (see ModelLifecycle.prepareBackends). */
  prepareBackends(): Promise<BackendNotice[]> {
    return this.lifecycle.prepareBackends();
  }

  /** Fills in the memory estimate of every model not estimated yet. */
  estimate(): Promise<void> {
    return this.lifecycle.estimate();
  }

  status(): { models: ModelStatus[]; budget: MemoryBudgetStatus } {
    return this.lifecycle.status();
  }

  statusOf(idOrEntry: string | ModelEntry): ModelStatus {
    return this.lifecycle.statusOf(idOrEntry);
  }

  budget(): MemoryBudgetStatus {
    return this.lifecycle.budget();
  }

  onChange(listener: (change: ModelChange) => void): () => void {
    return this.lifecycle.onChange(listener);
  }

  load(id: string): Promise<ModelStatus> {
    return this.lifecycle.load(id);
  }

  unload(id: string): Promise<ModelStatus> {
    return this.lifecycle.unload(id);
  }

  dispose(): Promise<void> {
    return this.lifecycle.dispose();
  }

  // Descriptions ---------------------------------------------------------------------------

  voices(entry: ModelEntry): string[] {
    return this.descriptions.voices(entry);
  }

  voiceAliases(entry: ModelEntry): Record<string, string> {
    return this.descriptions.voiceAliases(entry);
  }

  chatFeatures(id: string): Promise<ProbedChatFeatures | null> {
    return this.descriptions.chatFeatures(id);
  }

  contextSize(entry: ModelEntry): Promise<number> {
    return this.descriptions.contextSize(entry);
  }

  /** How a text model takes image and video parts (decoded here, relayed, or refused with the reason). */
  visualInput(entry: ModelEntry): VisualInput {
    return backendOf(entry).visualInput?.(entry) ?? { kind: "none", reason: `the ${entry.backend} backend takes no pictures or video` };
  }
}
