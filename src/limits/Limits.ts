import type { ModelEntry } from "../config.js";
import { RateLimitError } from "../errors.js";
import type { RequestContext } from "../http/requestContext.js";
import type { Db } from "../store/Store.js";
import type { RateLimiter } from "./RateLimiter.js";
import { limitClassFor, resolveLimit, type CallKind } from "./tiers.js";

/** Applies the rate-limit tables to authenticated calls and logs the calls they refuse. */
export class Limits {
  constructor(
    private readonly db: Db,
    private readonly limiter: RateLimiter,
    private readonly now: () => number,
  ) {}

  /** Admits a call or throws 429; returns the x-ratelimit-* headers to send either way. */
  admit(ctx: RequestContext, entry: ModelEntry, kind: CallKind): Record<string, string> {
    const auth = ctx.auth;
    if (!auth) return {};
    const limitClass = limitClassFor(kind, entry);
    const limit = resolveLimit(auth.rateLimitTier, limitClass, auth.rateLimitOverrides);
    const decision = this.limiter.admit(subject(auth.apiKeyId, entry.id, limitClass), limit);
    if (!decision.allowed) {
      this.log(auth.accountId, auth.apiKeyId, entry.id, `${auth.rateLimitTier}:${limitClass}`, decision.exceeded!);
      const what = decision.exceeded === "RPM" ? `${limit.rpm} requests` : `${limit.tpm} tokens`;
      throw new RateLimitError(`Rate limit exceeded: this key may use ${what} per minute on ${entry.id}. Retry after x-ratelimit-reset-requests.`, decision.headers);
    }
    return decision.headers;
  }

  recordTokens(ctx: RequestContext, entry: ModelEntry, tokens: number): void {
    // Only text models have token limits.
    if (ctx.auth && tokens > 0) this.limiter.recordTokens(subject(ctx.auth.apiKeyId, entry.id, limitClassFor("chat", entry)), tokens);
  }

  /** The limits a key has on each model, with what is left of the current window. */
  describe(ctx: RequestContext, models: readonly ModelEntry[], kindOf: (entry: ModelEntry) => CallKind | undefined) {
    const auth = ctx.auth!;
    return models.flatMap((entry) => {
      const kind = kindOf(entry);
      if (!kind) return [];
      const limitClass = limitClassFor(kind, entry);
      const limit = resolveLimit(auth.rateLimitTier, limitClass, auth.rateLimitOverrides);
      const state = this.limiter.peek(subject(auth.apiKeyId, entry.id, limitClass), limit);
      return [{ entry, limit, state }];
    });
  }

  log(accountId: string | null, apiKeyId: string | null, modelId: string | null, tier: string, limitType: string): void {
    this.db
      .prepare("INSERT INTO rate_limit_log (account_id, api_key_id, model_id, tier, limit_type, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(accountId, apiKeyId, modelId, tier, limitType, this.now());
  }
}

/** One window per key, model and class: a video model's queue and retrieve calls are counted apart. */
const subject = (apiKeyId: string, modelId: string, limitClass: string) => `${apiKeyId}\u0000${modelId}\u0000${limitClass}`;
