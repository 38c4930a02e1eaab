import type { ModelEntry } from "../config.js";
import { PermissionDeniedError, RateLimitError } from "../errors.js";
import type { RequestContext } from "../http/requestContext.js";
import type { Db } from "../store/Store.js";
import { keyModelPrivacy, modelPrivacyAllows } from "./modelPrivacy.js";
import type { RateLimiter } from "./RateLimiter.js";
import { limitClassFor, resolveLimit, type CallKind } from "./tiers.js";

/**
 * Admission of authenticated inference calls: the key's model-privacy setting, then the
 * rate-limit tables; refused calls are logged.
 */
export class Limits {
  constructor(
    private readonly db: Db,
    private readonly limiter: RateLimiter,
    private readonly now: () => number,
  ) {}

  /** Admits a call or throws 403 (privacy) / 429 (rate); returns the x-ratelimit-* headers to send. */
  admit(ctx: RequestContext, entry: ModelEntry, kind: CallKind): Record<string, string> {
    const auth = ctx.auth;
    if (!auth) return {};
    const privacy = keyModelPrivacy(this.db, auth.apiKeyId);
    if (!modelPrivacyAllows(privacy, entry)) {
      throw new PermissionDeniedError(`This API key's modelPrivacy is ${privacy}; the model "${entry.id}" is ${entry.privacy}.`);
    }
    const limitClass = limitClassFor(kind, entry);
    const limit = resolveLimit(auth.rateLimitTier, limitClass, auth.rateLimitOverrides);
    const decision = this.limiter.admit(subject(auth.apiKeyId, entry.id), limit);
    if (!decision.allowed) {
      this.log(auth.accountId, auth.apiKeyId, entry.id, `${auth.rateLimitTier}:${limitClass}`, decision.exceeded!);
      const what = decision.exceeded === "RPM" ? `${limit.rpm} requests` : `${limit.tpm} tokens`;
      throw new RateLimitError(`Rate limit exceeded: this key may use ${what} per minute on ${entry.id}. Retry after x-ratelimit-reset-requests.`, decision.headers);
    }
    return decision.headers;
  }

  recordTokens(ctx: RequestContext, entry: ModelEntry, tokens: number): void {
    if (ctx.auth && tokens > 0) this.limiter.recordTokens(subject(ctx.auth.apiKeyId, entry.id), tokens);
  }

  /** The limits a key has on each model, with what is left of the current window. */
  describe(ctx: RequestContext, models: readonly ModelEntry[], kindOf: (entry: ModelEntry) => CallKind | undefined) {
    const auth = ctx.auth!;
    return models.flatMap((entry) => {
      const kind = kindOf(entry);
      if (!kind) return [];
      const limit = resolveLimit(auth.rateLimitTier, limitClassFor(kind, entry), auth.rateLimitOverrides);
      const state = this.limiter.peek(subject(auth.apiKeyId, entry.id), limit);
      return [{ entry, limit, state }];
    });
  }

  log(accountId: string | null, apiKeyId: string | null, modelId: string | null, tier: string, limitType: string): void {
    this.db
      .prepare("INSERT INTO rate_limit_log (account_id, api_key_id, model_id, tier, limit_type, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(accountId, apiKeyId, modelId, tier, limitType, this.now());
  }
}

const subject = (apiKeyId: string, modelId: string) => `${apiKeyId}\u0000${modelId}`;
