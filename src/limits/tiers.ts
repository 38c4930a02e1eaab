import type { ModelEntry } from "../config/modelRegistry.js";

/**
 * The rate-limit tables of the API brief: requests (and, for text, tokens) per minute, by
 * the kind of call and the model's size tier, for standard and partner keys.
 */
export interface Limit {
  rpm: number;
  /** Tokens (prompt + completion) per minute; text models only. */
  tpm?: number;
}

export type LimitClass = "text:XS" | "text:S" | "text:M" | "text:L" | "image" | "audio" | "embedding" | "video_queue" | "video_retrieve" | "augment" | "account";
export type RateLimitTier = "standard" | "partner";

export const RATE_LIMIT_TABLES = Object.freeze({
  standard: {
    "text:XS": { rpm: 500, tpm: 1_000_000 },
    "text:S": { rpm: 75, tpm: 750_000 },
    "text:M": { rpm: 50, tpm: 750_000 },
    "text:L": { rpm: 20, tpm: 500_000 },
    image: { rpm: 20 },
    audio: { rpm: 60 },
    embedding: { rpm: 500 },
    video_queue: { rpm: 40 },
    video_retrieve: { rpm: 120 },
    // The brief gives none for web search, scraping and text parsing: the audio tier's.
    augment: { rpm: 60 },
    // Nor for the account endpoints (keys, billing, characters, voices, stored responses ...): a
    // generous window of their own, so every authenticated answer carries x-ratelimit-* headers that hold.
    account: { rpm: 300 },
  },
  // The brief gives no partner video limits: partners keep the standard ones there.
  partner: {
    "text:XS": { rpm: 500, tpm: 2_000_000 },
    "text:S": { rpm: 150, tpm: 1_500_000 },
    "text:M": { rpm: 100, tpm: 1_500_000 },
    "text:L": { rpm: 60, tpm: 1_000_000 },
    image: { rpm: 60 },
    audio: { rpm: 120 },
    embedding: { rpm: 500 },
    video_queue: { rpm: 40 },
    video_retrieve: { rpm: 120 },
    augment: { rpm: 120 },
    account: { rpm: 600 },
  },
} as const satisfies Record<RateLimitTier, Record<LimitClass, Limit>>);

export type CallKind = "chat" | "image" | "audio" | "embedding" | "video_queue" | "video_retrieve";

export function limitClassFor(kind: CallKind, entry: ModelEntry): LimitClass {
  return kind === "chat" ? `text:${entry.tier}` : kind;
}

/** Admin overrides per key: by class, or "*" for every class. */
export type LimitOverrides = Partial<Record<LimitClass | "*", Partial<Limit>>>;

export function resolveLimit(tier: RateLimitTier, limitClass: LimitClass, overrides: LimitOverrides | null): Limit {
  const base: Limit = { ...RATE_LIMIT_TABLES[tier][limitClass] };
  return { ...base, ...overrides?.["*"], ...overrides?.[limitClass] };
}
