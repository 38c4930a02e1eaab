import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ModelEntry } from "../../config/modelRegistry.js";
import type { Pooling } from "../embeddingMath.js";
import type { ChatFeatures, SamplingOptions } from "../types.js";

// Read from a transformers.js model directory without loading transformers.js itself (it costs
// about 165 MiB of memory and a second of start-up): GET /models describes unloaded models with these.

export const readJson = (path: string): Record<string, unknown> | undefined => (existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : undefined);

/** sentence-transformers' pooling config (1_Pooling/config.json), when the export has one. */
export function poolingOf(dir: string, configured: ModelEntry["embedding"]["pooling"]): Pooling {
  if (configured !== "auto") return configured;
  const st = readJson(join(dir, "1_Pooling", "config.json"));
  if (st?.pooling_mode_cls_token) return "cls";
  if (st?.pooling_mode_lasttoken) return "last";
  return "mean";
}

/** The tokens one input may have: the setting, else the tokenizer's limit bounded by the position table. */
export function inputLimit(dir: string, configured: number | undefined): number {
  if (configured) return configured;
  const tokenizerMax = Number(readJson(join(dir, "tokenizer_config.json"))?.model_max_length);
  const positions = Number(readJson(join(dir, "config.json"))?.max_position_embeddings);
  const candidates = [tokenizerMax, positions].filter((n) => Number.isFinite(n) && n > 0 && n < 1e7);
  return candidates.length ? Math.min(...candidates) : 512;
}

/** The vision-language families (config.json model_type) the transformers backend chats with: Idefics3's processor and image tokens. */
export const VISION_CHAT_FAMILIES = ["idefics3", "smolvlm"] as const;

/** What config.json says that vision chat reads. */
interface VisionModelConfig {
  model_type?: string;
  eos_token_id?: number | number[];
  vocab_size?: number;
  text_config?: { max_position_embeddings?: number; eos_token_id?: number | number[]; vocab_size?: number };
}

/** What a vision-language model's directory says about generation. */
export interface VisionModelFacts {
  contextSize: number;
  vocabularySize: number;
  /** Tokens that end an answer (config.json's eos_token_id). */
  eosTokenIds: number[];
}

/** Reads and checks a vision-language model's config.json (Idefics3 / SmolVLM). */
export function readVisionModelFacts(entry: ModelEntry): VisionModelFacts {
  const dir = entry.file!;
  const config = readJson(join(dir, "config.json")) as VisionModelConfig | undefined;
  if (!config || !(VISION_CHAT_FAMILIES as readonly string[]).includes(config.model_type ?? "")) {
    throw new Error(`${dir}: not an Idefics3/SmolVLM model (config.json model_type "${config?.model_type}"; this backend runs ${VISION_CHAT_FAMILIES.join(", ")})`);
  }
  const text = config.text_config ?? {};
  return {
    contextSize: entry.vision.contextSize ?? text.max_position_embeddings ?? 2048,
    vocabularySize: text.vocab_size ?? config.vocab_size ?? 0,
    eosTokenIds: [config.eos_token_id ?? text.eos_token_id].flat().filter((id): id is number => typeof id === "number"),
  };
}

/** Choices one vision chat request may ask for: generated one after the other. */
const MAX_VISION_CHOICES = 4;

/** Sampling fields transformers.js' generate() has no processor for (top_p's warper is a stub in 4.x). */
const IGNORED_VISION_SAMPLING: readonly (keyof SamplingOptions)[] = ["topP", "minP", "seed", "frequencyPenalty", "presencePenalty", "logitBias"];

/** What the vision chat engine does: plain text and pictures, none of tools, reasoning, grammars or log probabilities. */
export function visionChatFeatures(facts: VisionModelFacts): ChatFeatures {
  return {
    ignoredSampling: IGNORED_VISION_SAMPLING,
    functionCalling: false,
    reasoning: false,
    reasoningToggle: false,
    responseSchema: false,
    logprobs: false,
    dynamicTemperature: false,
    maxChoices: MAX_VISION_CHOICES,
    vocabularySize: facts.vocabularySize,
    infill: false,
  };
}

/**
 * The most UTF-8 bytes one token of a vision model's tokenizer stands for (its added tokens'
 * text included), where that bounds a prompt's characters: a byte-level BPE without a
 * normalizer turns every byte of the input into some token, so text of N UTF-16 code units
 * (each at least one byte) is at least N / longest tokens. Its vocabulary is written in
 * byte-level characters, one per byte. Undefined for any other tokenizer (one that normalizes
 * can drop characters), or without a tokenizer.json.
 */
export function longestTokenBytes(dir: string): number | undefined {
  const tokenizer = readJson(join(dir, "tokenizer.json")) as
    | {
        normalizer?: unknown;
        pre_tokenizer?: { type?: string; pretokenizers?: { type?: string }[] };
        model?: { type?: string; vocab?: Record<string, number> };
        added_tokens?: { content?: string }[];
      }
    | undefined;
  const pre = tokenizer?.pre_tokenizer;
  const byteLevel = pre?.type === "ByteLevel" || (pre?.type === "Sequence" && (pre.pretokenizers ?? []).some((p) => p.type === "ByteLevel"));
  if (!tokenizer || tokenizer.normalizer || !byteLevel || tokenizer.model?.type !== "BPE" || !tokenizer.model.vocab) return undefined;
  // An unknown character becomes one token at most 4 bytes long, whatever the vocabulary.
  let longest = 4;
  for (const piece of Object.keys(tokenizer.model.vocab)) longest = Math.max(longest, piece.length);
  for (const added of tokenizer.added_tokens ?? []) longest = Math.max(longest, Buffer.byteLength(added.content ?? ""));
  return longest;
}
