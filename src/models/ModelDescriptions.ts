import type { ModelEntry } from "../config/modelRegistry.js";
import { backendOf, type ProbedChatFeatures } from "../engines/registry.js";
import type { ModelFileStamp } from "../store/modelFileFeatures.js";
import { fileStamp } from "./fileStamp.js";
import type { ModelLifecycle } from "./ModelLifecycle.js";
import type { ModelRegistry } from "./ModelRegistry.js";

/**
 * A lasting cache of what a model file's header says (chat features), keyed by the file's
 * path, size and modification time: GET /models reads it instead of analysing the chat
 * template again after a restart (the store's model_file_features; absent: memory only).
 */
export interface FileFeatureCache {
  get(stamp: ModelFileStamp): ProbedChatFeatures | undefined;
  put(stamp: ModelFileStamp, features: ProbedChatFeatures): void;
}

/**
 * What GET /models and the admin views say about a model beyond its registry entry, learned
 * without loading it where possible (a loaded engine knows best): chat features, context
 * window, voices and voice aliases. Each comes from the model's backend descriptor.
 */
export class ModelDescriptions {
  private readonly probedFeatures = new Map<string, Promise<ProbedChatFeatures | null>>();

  constructor(
    private readonly registry: ModelRegistry,
    private readonly lifecycle: ModelLifecycle,
    private readonly fileFeatureCache: FileFeatureCache | undefined,
  ) {}

  /** The voices of a speech model, without loading it (a loaded engine knows best: an upstream's fetched list). */
  voices(entry: ModelEntry): string[] {
    const loaded = this.lifecycle.loadedEngine(entry.id);
    if (loaded?.kind === "speech") return [...loaded.voices()];
    return backendOf(entry).listVoices?.(entry) ?? [];
  }

  /** A speech model's map from other voice names (the standard's alloy, onyx, ...) to its own voices. */
  voiceAliases(entry: ModelEntry): Record<string, string> {
    return { ...backendOf(entry).standardVoiceMap?.(entry, this.voices(entry)), ...entry.speech.voiceAliases };
  }

  /** A text model's context window: the backend's (an upstream's learned when it loaded), else the llama setting. */
  async contextSize(entry: ModelEntry): Promise<number> {
    return (await backendOf(entry).contextSize?.(entry, this.lifecycle.loadedEngine(entry.id))) ?? entry.llama.contextSize;
  }

  /**
   * A text model's chat features without loading it: a loaded engine's own, else read from
   * the model file's template (cached per file: analysing a template Hearth does not know
   * takes about a second).
   * Null when the file cannot be read (GET /models then shows the registry's values).
   */
  async chatFeatures(id: string): Promise<ProbedChatFeatures | null> {
    const entry = this.registry.get(id, "text");
    const loaded = this.lifecycle.loadedEngine(id);
    if (loaded?.kind === "chat") return loaded.features;
    const probe = backendOf(entry).probeChatFeatures;
    if (!probe) return null;
    // Per file (models sharing a GGUF share the probe); models without a file are probed on their own.
    const key = `${entry.backend}:${entry.file ?? `model:${entry.id}`}`;
    let features = this.probedFeatures.get(key);
    if (!features) {
      const stamp = entry.file ? fileStamp(entry.file, entry.backend) : undefined;
      const cache = this.fileFeatureCache;
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
}
