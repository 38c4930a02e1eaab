import type { ModelEntry } from "../config/modelRegistry.js";
import { costLine, type CostLine } from "./money.js";

/**
 * Prices from models.config.json (the reference's pricing shapes, in whole USD/DIEM) turned
 * into cost lines. A model without pricing is free.
 */
const PER_MILLION = 1_000_000;

export interface TextUsage {
  promptTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  completionTokens: number;
}

type Price = { usd: number; diem: number };
const maxPrice = (a: Price, b: Price | undefined): Price => (b ? { usd: Math.max(a.usd, b.usd), diem: Math.max(a.diem, b.diem) } : a);

/** The ledger sku of a text model's output tokens: the model id and this. */
const OUTPUT_TOKEN_SKU = "-llm-output-mtoken";
const outputTokenSku = (modelId: string) => `${modelId}${OUTPUT_TOKEN_SKU}`;

/** Whether a line prices generated text tokens (the part of a hold that max_tokens sets). */
export const isOutputTokenLine = (line: CostLine) => line.sku.endsWith(OUTPUT_TOKEN_SKU);

/** The most a text request can cost: every prompt token at the dearest input rate, every allowed completion token. */
export function maxTextCost(entry: ModelEntry, promptTokens: number, maxCompletionTokens: number): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing || !("output" in pricing)) return [];
  return [
    costLine(`${entry.id}-llm-input-mtoken`, promptTokens, PER_MILLION, maxPrice(pricing.input, pricing.cache_write)),
    costLine(outputTokenSku(entry.id), maxCompletionTokens, PER_MILLION, pricing.output),
  ];
}

export function textCost(entry: ModelEntry, usage: TextUsage): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing || !("output" in pricing)) return [];
  const cached = pricing.cache_input ? usage.cachedTokens : 0;
  const written = pricing.cache_write ? usage.cacheWriteTokens : 0;
  const lines = [costLine(`${entry.id}-llm-input-mtoken`, usage.promptTokens - cached - written, PER_MILLION, pricing.input)];
  if (cached > 0) lines.push(costLine(`${entry.id}-llm-cache-input-mtoken`, cached, PER_MILLION, pricing.cache_input!));
  if (written > 0) lines.push(costLine(`${entry.id}-llm-cache-write-mtoken`, written, PER_MILLION, pricing.cache_write!));
  lines.push(costLine(outputTokenSku(entry.id), usage.completionTokens, PER_MILLION, pricing.output));
  return lines.filter((line) => line.units > 0);
}

/**
 * Speech is priced per thousand input characters (the reference's per_thousand_characters).
 * Characters are Unicode code points of the input text, so an emoji is one character, not two.
 */
export function speechCost(entry: ModelEntry, characters: number): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing || characters <= 0) return [];
  if ("per_thousand_characters" in pricing) return [costLine(`${entry.id}-tts-kchar`, characters, 1000, pricing.per_thousand_characters)];
  // The reference's /models shape for TTS: { input } per million characters.
  if ("input" in pricing && !("output" in pricing)) return [costLine(`${entry.id}-tts-mchar`, characters, PER_MILLION, pricing.input)];
  return [];
}

/** Transcription is priced per second of input audio (the reference's per_audio_second), rounded up to the millisecond. */
export function transcriptionCost(entry: ModelEntry, audioSeconds: number): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing || !("per_audio_second" in pricing) || audioSeconds <= 0) return [];
  const milliseconds = Math.ceil(audioSeconds * 1000);
  return [costLine(`${entry.id}-asr-second`, milliseconds, 1000, pricing.per_audio_second)];
}

/** Characters as billed: Unicode code points. */
export const countCharacters = (text: string) => [...text].length;

/**
 * Per image: the step class covering `steps` (the smallest `max_steps` at or above it) when
 * the model prices step classes, else `generation`. Variants are images.
 */
export function imageCost(entry: ModelEntry, usage: { images: number; steps: number }): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing || !("generation" in pricing)) return [];
  const classes = Object.entries(pricing.steps ?? {})
    .filter(([, tier]) => tier.max_steps >= usage.steps)
    .sort(([, a], [, b]) => a.max_steps - b.max_steps);
  const [name, tier] = classes[0] ?? ["generation", pricing.generation];
  const sku = name === "generation" ? `${entry.id}-image-generation` : `${entry.id}-image-${name}`;
  return [costLine(sku, usage.images, 1, tier)].filter((line) => line.units > 0);
}

/** Per picture, at the reference's 2x or 4x price (a factor the node reduced to fit its size limit pays the 4x price above 2). */
export function upscaleCost(entry: ModelEntry, scale: number): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing || !("upscale" in pricing)) return [];
  const tier = scale > 2 ? "4x" : "2x";
  return [costLine(`${entry.id}-upscale-${tier}`, 1, 1, pricing.upscale[tier])];
}

/** Per picture, at the model's `generation` price. */
export function backgroundRemovalCost(entry: ModelEntry, pictures: number): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing || !("generation" in pricing) || pictures <= 0) return [];
  return [costLine(`${entry.id}-background-removal`, pictures, 1, pricing.generation)];
}

/** Per million input tokens. */
export function embeddingCost(entry: ModelEntry, tokens: number): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing || !("input" in pricing) || "output" in pricing) return [];
  return [costLine(`${entry.id}-embedding-input-mtoken`, tokens, PER_MILLION, pricing.input)].filter((line) => line.units > 0);
}

export class UnpricedDurationError extends Error {
  override name = "UnpricedDurationError";
}

/**
 * A video: per second (at the resolution's rate when the model prices resolutions), or the
 * duration tier whose [min_seconds, max_seconds] holds the duration.
 */
export function videoCost(entry: ModelEntry, usage: { seconds: number; resolution: string }): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing) return [];
  if ("per_second" in pricing) {
    const rate = pricing.resolutions?.[usage.resolution];
    const sku = rate ? `${entry.id}-video-second-${usage.resolution}` : `${entry.id}-video-second`;
    return [costLine(sku, usage.seconds, 1, rate ?? pricing.per_second)];
  }
  if ("durations" in pricing) {
    const tier = Object.entries(pricing.durations).find(([, t]) => usage.seconds >= t.min_seconds && usage.seconds <= t.max_seconds);
    if (!tier) throw new UnpricedDurationError(`no duration tier of ${entry.id} covers ${usage.seconds} seconds`);
    return [costLine(`${entry.id}-video-${tier[0]}`, 1, 1, tier[1])];
  }
  return [];
}

/**
 * A music clip: per second of generated music, per generation, or the duration tier whose
 * [min_seconds, max_seconds] holds the duration (the reference's three music shapes).
 */
export function musicCost(entry: ModelEntry, seconds: number): CostLine[] {
  const pricing = entry.pricing;
  if (!pricing) return [];
  if ("per_second" in pricing) return [costLine(`${entry.id}-music-second`, seconds, 1, pricing.per_second)];
  if ("generation" in pricing) return [costLine(`${entry.id}-music-generation`, 1, 1, pricing.generation)];
  if ("durations" in pricing) {
    const tier = Object.entries(pricing.durations).find(([, t]) => seconds >= t.min_seconds && seconds <= t.max_seconds);
    if (!tier) throw new UnpricedDurationError(`no duration tier of ${entry.id} covers ${seconds} seconds`);
    return [costLine(`${entry.id}-music-${tier[0]}`, 1, 1, tier[1])];
  }
  return [];
}

/**
 * Chat web augmentation, priced per use by the node's settings (--search-price, --scrape-price):
 * one line per search run and one per page scraped successfully, the same amount in USD or DIEM.
 */
export function webSearchCost(searches: number, priceUsd: number): CostLine[] {
  return searches > 0 ? [costLine("web-search", searches, 1, { usd: priceUsd, diem: priceUsd })] : [];
}
export function webScrapeCost(pages: number, priceUsd: number): CostLine[] {
  return pages > 0 ? [costLine("web-scrape", pages, 1, { usd: priceUsd, diem: priceUsd })] : [];
}
