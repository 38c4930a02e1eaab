import type { ModelEntry, ModelsConfig } from "../config/modelRegistry.js";
import { backendOf } from "../engines/registry.js";
import { ModelNotFoundError } from "../errors.js";
import { STANDARD_MODEL_NAMES, standardModelType } from "./standardModelNames.js";

/** A name other than an id that resolves to a model: a configured alias, or a standard name that falls to a default model. */
export interface CompatibilityName {
  name: string;
  model: string;
  type: ModelEntry["type"];
  source: "alias" | "standard";
}

/**
 * The models a request can name: ids, configured aliases and the standard's names (tts-1,
 * whisper-1, ...) -> registry entries. Models whose backend cannot run here (an upstream
 * without a base URL) are left out, and listed in `skipped` with the reason.
 */
export class ModelRegistry {
  private readonly entries = new Map<string, ModelEntry>();
  /** Configured alias -> model id. */
  private readonly aliasIndex = new Map<string, string>();
  readonly skipped: { id: string; reason: string }[] = [];

  constructor(config: ModelsConfig) {
    for (const model of config.models) {
      const check = backendOf(model).servable(model);
      if (!check.servable) {
        this.skipped.push({ id: model.id, reason: check.reason });
        continue;
      }
      this.entries.set(model.id, model);
      for (const alias of model.aliases) this.aliasIndex.set(alias, model.id);
    }
  }

  list(): ModelEntry[] {
    return [...this.entries.values()];
  }

  /** The entry of a model id (not an alias), if it is served. */
  byId(id: string): ModelEntry | undefined {
    return this.entries.get(id);
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
  compatibilityMapping(): CompatibilityName[] {
    const mapping: CompatibilityName[] = [...this.aliasIndex].map(([name, id]) => ({ name, model: id, type: this.entries.get(id)!.type, source: "alias" }));
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

  /** The model a request falls back to when it names none: the one with the "default" trait, else the first of the type. */
  defaultFor(type: ModelEntry["type"]): ModelEntry | undefined {
    const candidates = this.list().filter((m) => m.type === type);
    return candidates.find((m) => m.traits.includes("default")) ?? candidates[0];
  }
}
