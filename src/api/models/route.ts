import { Router } from "express";
import { basename } from "node:path";
import type { ModelEntry } from "../../config.js";
import { parse } from "../../http/parse.js";
import type { AppDeps } from "../../app.js";
import { ListModelsQuery, type ModelRecord } from "./schema.js";

/** The registry entry in the reference's model record shape; speech models list their voices. */
export function toModelRecord(entry: ModelEntry, startedAt: number, voices: readonly string[] = []): ModelRecord {
  const isText = entry.type === "text";
  const record: ModelRecord = {
    id: entry.id,
    object: "model",
    type: entry.type,
    created: entry.created ?? Math.floor(startedAt / 1000),
    owned_by: "hearth",
    model_spec: {
      name: entry.name ?? entry.id,
      description: entry.description,
      privacy: entry.privacy,
      beta: entry.beta,
      offline: entry.offline,
      modelSource: entry.file ? basename(entry.file) : entry.backend,
      traits: entry.traits,
      capabilities: entry.capabilities,
      constraints: entry.constraints,
      pricing: entry.pricing,
      deprecation: entry.deprecation ? { date: entry.deprecation.date, replacementModelId: entry.deprecation.replacementModelId } : undefined,
    },
  };
  if (isText) {
    record.context_length = entry.llama.contextSize;
    record.model_spec.availableContextTokens = entry.llama.contextSize;
    record.model_spec.maxCompletionTokens = entry.maxCompletionTokens ?? entry.llama.contextSize;
  }
  if (entry.type === "tts") Object.assign(record.model_spec, speechSpec(entry, voices));
  if (entry.type === "asr") {
    record.model_spec.capabilities = { supportsTimestamps: true, supportsWordTimestamps: entry.transcription.wordTimestamps, supportsLanguageHint: true };
    record.model_spec.constraints = { maxAudioSeconds: entry.transcription.maxAudioSeconds };
  }
  return record;
}

/** What a speech model offers, in the reference's field names. Text-model capabilities do not apply. */
function speechSpec(entry: ModelEntry, voices: readonly string[]): Partial<ModelRecord["model_spec"]> {
  const speech = entry.speech;
  const cloning = entry.voiceCloning;
  return {
    capabilities: {
      supportsPromptParam: speech.supportsPromptParam,
      supportsTemperatureParam: speech.supportsTemperatureParam,
      supportsTopPParam: speech.supportsTopPParam,
    },
    constraints: {},
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

export function modelsRouter(deps: AppDeps): Router {
  const router = Router();
  router.get("/models", (req, res) => {
    const { type } = parse(ListModelsQuery, req.query);
    const data = deps.models
      .list()
      .filter((m) => type === "all" || (type === "code" ? m.capabilities.optimizedForCode : m.type === type))
      .map((m) => toModelRecord(m, deps.startedAt, deps.models.voices(m)));
    res.json({ object: "list", type, data });
  });
  // Ids may hold '/' (openai/whisper-large-v3): the rest of the path is the id.
  router.get("/models/*id", (req, res) => {
    const id = (req.params as { id: string[] }).id.join("/");
    const entry = deps.models.get(id);
    res.json(toModelRecord(entry, deps.startedAt, deps.models.voices(entry)));
  });
  return router;
}
