import { Router } from "express";
import { basename } from "node:path";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { ModelNotFoundError } from "../../errors.js";
import { backendOf, type ProbedChatFeatures, type VisualInput } from "../../engines/registry.js";
import { parse } from "../../http/parse.js";
import type { AppDeps } from "../../appDeps.js";
import type { Engine } from "../../engines/types.js";
import { resolveSafetyChecker } from "../../engines/diffusion/safetyChecker.js";
import { EDIT_ASPECT_RATIOS } from "../images/editSchema.js";
import { ListModelsQuery, ModelNamesQuery, type ModelCapabilities, type ModelRecord } from "./schema.js";

/** Whether an image model has a safety classifier (safe mode is only claimed with one). */
export function hasSafetyChecker(entry: ModelEntry): boolean {
  if (!entry.file) return false;
  try {
    return resolveSafetyChecker(entry.file, entry.image.safetyChecker) !== null;
  } catch {
    return false;
  }
}

/** Type-specific fields: image and video constraints in the reference's shapes, embedding sizes. */
function addMediaFields(record: ModelRecord, entry: ModelEntry, engine: Engine | undefined): void {
  const spec = record.model_spec;
  if (entry.type === "image") {
    const image = entry.image;
    spec.constraints = {
      promptCharacterLimit: image.promptCharacterLimit,
      steps: { default: image.defaultSteps, max: image.maxSteps },
      widthHeightDivisor: image.widthHeightDivisor,
      defaultWidth: image.defaultWidth,
      defaultHeight: image.defaultHeight,
      maxWidth: image.maxWidth,
      maxHeight: image.maxHeight,
      defaultCfgScale: image.defaultCfgScale,
    };
    spec.supportsSafeMode = hasSafetyChecker(entry);
    spec.supportsStyleReferences = false;
  } else if (entry.type === "inpaint") {
    // The reference's inpaint constraints: one picture per edit (the first of multi-edit's images), any aspect ratio it lists.
    spec.constraints = {
      aspectRatios: [...EDIT_ASPECT_RATIOS],
      promptCharacterLimit: entry.image.promptCharacterLimit,
      combineImages: false,
      maxInputImages: 1,
    };
    spec.supportsSafeMode = hasSafetyChecker(entry);
  } else if (entry.type === "video") {
    const video = entry.video;
    spec.constraints = {
      aspect_ratios: video.aspectRatios,
      resolutions: Object.keys(video.resolutions),
      durations: video.durations,
      model_type: "text-to-video",
      audio: false,
      audio_configurable: false,
      prompt_character_limit: entry.image.promptCharacterLimit,
      fps: video.fps,
      max_fps: video.maxFps,
    };
  } else if (entry.type === "embedding") {
    const loaded = engine?.kind === "embedding" ? engine : undefined;
    // Before the model loads, what its files say (an ONNX encoder's config.json); a GGUF says nothing until loaded.
    const files = backendOf(entry).embeddingShape?.(entry) ?? {};
    spec.embeddingDimensions = loaded?.dimensions ?? files.dimensions;
    spec.maxInputTokens = loaded?.maxInputTokens ?? entry.embedding.maxInputTokens ?? files.maxInputTokens;
    spec.supportsCustomDimensions = entry.embedding.supportsCustomDimensions;
  }
}

/** The one value the reference's schema allows in `owned_by` (strict clients check it). */
export const OWNED_BY = "venice.ai";
/** Who serves the model: this node (an extension field; the reference's model record allows extra fields). */
export const SERVED_BY = "hearth";

/**
 * The reference's capability object: exactly its flags (every required one, false where the
 * model cannot), nothing else. What a speech, transcription or image model offers beyond them
 * sits on model_spec, where the reference puts such fields (voices, supports_speed...).
 */
function referenceCapabilities(flags: Record<string, unknown>): ModelCapabilities {
  const flag = (name: string) => flags[name] === true;
  const efforts = flags.reasoningEffortOptions;
  const defaultEffort = flags.defaultReasoningEffort;
  return {
    optimizedForCode: flag("optimizedForCode"),
    quantization: (typeof flags.quantization === "string" ? flags.quantization : "not-available") as ModelCapabilities["quantization"],
    supportsFunctionCalling: flag("supportsFunctionCalling"),
    supportsAudioInput: flag("supportsAudioInput"),
    supportsReasoning: flag("supportsReasoning"),
    supportsReasoningEffort: flag("supportsReasoningEffort"),
    ...(Array.isArray(efforts) ? { reasoningEffortOptions: efforts as ModelCapabilities["reasoningEffortOptions"] } : {}),
    ...(typeof defaultEffort === "string" ? { defaultReasoningEffort: defaultEffort as ModelCapabilities["defaultReasoningEffort"] } : {}),
    supportsResponseSchema: flag("supportsResponseSchema"),
    supportsMultipleImages: flag("supportsMultipleImages"),
    ...(typeof flags.maxImages === "number" ? { maxImages: flags.maxImages } : {}),
    ...(typeof flags.maxVideos === "number" ? { maxVideos: flags.maxVideos } : {}),
    supportsVision: flag("supportsVision"),
    supportsVideoInput: flag("supportsVideoInput"),
    supportsWebSearch: flag("supportsWebSearch"),
    supportsLogProbs: flag("supportsLogProbs"),
    supportsTeeAttestation: flag("supportsTeeAttestation"),
    supportsE2EE: flag("supportsE2EE"),
    supportsXSearch: flag("supportsXSearch"),
  };
}

const EFFORTS = ["minimal", "low", "medium", "high", "xhigh", "max"] as const;

/**
 * What the chat path can do with this model, as the reference's capability flags: derived
 * from the model's own template (tool-call syntax, thought blocks, enable_thinking), not
 * claimed by configuration. The registry supplies the flags Hearth cannot derive.
 */
function derivedCapabilities(features: ProbedChatFeatures): Record<string, unknown> {
  return {
    supportsFunctionCalling: features.functionCalling,
    supportsResponseSchema: features.responseSchema,
    supportsLogProbs: features.logprobs,
    supportsReasoning: features.reasoning,
    supportsReasoningEffort: features.reasoning,
    ...(features.reasoning ? { reasoningEffortOptions: features.reasoningToggle ? ["none", ...EFFORTS] : [...EFFORTS] } : {}),
  };
}

/** What a text model takes of pictures and video (GET /models), from how its backend reads image and video parts. */
function visionCapabilities(visual: VisualInput): Record<string, unknown> {
  if (visual.kind === "none") return {};
  return {
    supportsVision: visual.maxImages > 0,
    supportsMultipleImages: visual.maxImages > 1,
    maxImages: visual.maxImages,
    supportsVideoInput: visual.maxVideos > 0,
    ...(visual.maxVideos > 0 ? { maxVideos: visual.maxVideos } : {}),
  };
}

/** Abilities of the node that every text model gains (chat web search, input_audio parts). */
export interface NodeAbilities {
  webSearch: boolean;
  audioInput: boolean;
}

/** The registry entry in the reference's model record shape; speech models list their voices, text models their derived chat capabilities. */
export function toModelRecord(
  entry: ModelEntry,
  startedAt: number,
  extra: {
    voices?: readonly string[];
    voiceAliases?: Record<string, string>;
    aliases?: string[];
    engine?: Engine;
    features?: ProbedChatFeatures | null;
    /** Text models: how image and video parts reach the model. */
    visual?: VisualInput;
    /** Text models: the context window (the backend's, see ModelManager.contextSize). */
    contextSize?: number;
    node?: NodeAbilities;
  } = {},
): ModelRecord {
  const { voices = [], voiceAliases = {}, aliases = [], engine, features = null, node } = extra;
  const isText = entry.type === "text";
  const record: ModelRecord = {
    id: entry.id,
    object: "model",
    type: entry.type as ModelRecord["type"],
    created: entry.created ?? Math.floor(startedAt / 1000),
    // The reference allows one value here; the node that serves the model says so in served_by.
    owned_by: OWNED_BY,
    served_by: SERVED_BY,
    model_spec: {
      name: entry.name ?? entry.id,
      description: entry.description,
      privacy: entry.privacy,
      beta: entry.beta,
      offline: entry.offline,
      modelSource: entry.file ? basename(entry.file) : entry.backend,
      traits: entry.traits,
      capabilities: referenceCapabilities(
        isText
          ? {
              ...entry.capabilities,
              ...(features ? derivedCapabilities(features) : {}),
              ...(extra.visual ? visionCapabilities(extra.visual) : {}),
              // What this node adds to every text model: web search with a provider, audio parts with a speech-to-text model.
              ...(node?.webSearch ? { supportsWebSearch: true } : {}),
              ...(node?.audioInput ? { supportsAudioInput: true } : {}),
            }
          : entry.capabilities,
      ),
      // The registry's sampling defaults (temperature, top_p and any others configured): the reference's text shape; image and video models get theirs below.
      constraints: entry.constraints,
      pricing: entry.pricing,
      deprecation: entry.deprecation ? { date: entry.deprecation.date, replacementModelId: entry.deprecation.replacementModelId } : undefined,
      ...(aliases.length ? { aliases } : {}),
    },
  };
  if (isText) {
    const contextSize = extra.contextSize ?? entry.llama.contextSize;
    record.context_length = contextSize;
    record.model_spec.availableContextTokens = contextSize;
    record.model_spec.maxCompletionTokens = entry.maxCompletionTokens ?? contextSize;
  }
  if (entry.type === "tts") Object.assign(record.model_spec, speechSpec(entry, voices), { voice_aliases: voiceAliases });
  if (entry.type === "music") Object.assign(record.model_spec, musicSpec(entry));
  if (entry.type === "asr") {
    Object.assign(record.model_spec, {
      supportsTimestamps: true,
      supportsWordTimestamps: entry.transcription.wordTimestamps,
      supportsLanguageHint: true,
      maxAudioSeconds: entry.transcription.maxAudioSeconds,
    });
  }
  addMediaFields(record, entry, engine);
  return record;
}

/** What a speech model offers, in the reference's field names. Text-model capabilities do not apply. */
function speechSpec(entry: ModelEntry, voices: readonly string[]): Partial<ModelRecord["model_spec"]> {
  const speech = entry.speech;
  const cloning = entry.voiceCloning;
  return {
    supportsPromptParam: speech.supportsPromptParam,
    supportsTemperatureParam: speech.supportsTemperatureParam,
    supportsTopPParam: speech.supportsTopPParam,
    voices: [...voices],
    default_voice: speech.defaultVoice ?? voices[0],
    ...(cloning
      ? {
          voice_cloning: {
            // The speaker encoder derives a style vector once; it is kept until the handle expires.
            mode: "persistent" as const,
            accepted_formats: cloning.acceptedFormats,
            min_sample_seconds: cloning.recommendedSampleSeconds,
            retention_days: cloning.retentionDays,
          },
        }
      : {}),
    supports_custom_voice_id: speech.supportsCustomVoiceId,
    supported_formats: speech.supportedFormats,
    default_format: speech.defaultFormat,
    supports_speed: true,
    min_speed: 0.25,
    max_speed: 4,
    default_speed: 1,
  };
}

/**
 * What a music model offers, in the reference's field names: instrumental clips (no lyrics, so
 * force_instrumental always holds), loops when a crossfade is configured, its durations and formats.
 */
function musicSpec(entry: ModelEntry): Partial<ModelRecord["model_spec"]> {
  const music = entry.music;
  return {
    supports_lyrics: false,
    lyrics_required: false,
    supports_force_instrumental: true,
    supports_loop: music.loopCrossfadeSeconds > 0,
    ...(music.durationOptions ? { duration_options: music.durationOptions } : {}),
    min_duration: music.minDurationSeconds,
    max_duration: music.maxDurationSeconds,
    default_duration: music.defaultDurationSeconds,
    supported_formats: music.supportedFormats,
    default_format: music.defaultFormat,
    prompt_character_limit: music.promptCharacterLimit,
    min_prompt_length: 1,
  };
}

/** Background-removal models are Hearth's own type (the reference lists none): GET /admin/models shows them, GET /models does not. */
function isListed(entry: ModelEntry): entry is ModelEntry & { type: Exclude<ModelEntry["type"], "background-removal"> } {
  return entry.type !== "background-removal";
}

export type ModelsRouterDeps = Pick<AppDeps, "models" | "config" | "startedAt">;

export function modelsRouter(deps: ModelsRouterDeps): Router {
  const router = Router();
  const extrasOf = async (entry: ModelEntry) => ({
    voices: deps.models.voices(entry),
    voiceAliases: entry.type === "tts" ? deps.models.voiceAliases(entry) : undefined,
    aliases: deps.models.aliasesOf(entry),
    engine: deps.models.loadedEngine(entry.id),
    features: entry.type === "text" ? await deps.models.chatFeatures(entry.id) : null,
    visual: entry.type === "text" ? deps.models.visualInput(entry) : undefined,
    contextSize: entry.type === "text" ? await deps.models.contextSize(entry) : undefined,
    node: { webSearch: deps.config.searchUrl !== undefined, audioInput: entry.audioInput !== undefined || deps.models.defaultFor("asr") !== undefined },
  });
  router.get("/models", async (req, res) => {
    const { type } = parse(ListModelsQuery, req.query);
    const entries = deps.models.list().filter((m) => isListed(m) && (type === "all" || (type === "code" ? m.capabilities.optimizedForCode : m.type === type)));
    const data = await Promise.all(entries.map(async (m) => toModelRecord(m, deps.startedAt, await extrasOf(m))));
    res.json({ object: "list", type, data });
  });
  router.get("/models/traits", (req, res) => {
    const { type } = parse(ModelNamesQuery, req.query);
    const data: Record<string, string> = {};
    for (const entry of deps.models.list().filter((m) => m.type === type)) {
      for (const trait of entry.traits) data[trait] ??= entry.id;
    }
    res.json({ object: "list", type, data });
  });
  router.get("/models/compatibility_mapping", (req, res) => {
    const { type } = parse(ModelNamesQuery, req.query);
    const data = Object.fromEntries(
      deps.models
        .compatibilityMapping()
        .filter((name) => name.type === type)
        .map((name) => [name.name, name.model]),
    );
    res.json({ object: "list", type, data });
  });
  // Ids may hold '/' (openai/whisper-large-v3): the rest of the path is the id.
  router.get("/models/*id", async (req, res) => {
    const id = (req.params as { id: string[] }).id.join("/");
    const entry = deps.models.get(id);
    if (!isListed(entry)) throw new ModelNotFoundError(id);
    res.json(toModelRecord(entry, deps.startedAt, await extrasOf(entry)));
  });
  return router;
}
