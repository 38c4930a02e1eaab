import type { ModelEntry } from "../config/modelRegistry.js";
import { PermissionDeniedError, RateLimitError } from "../errors.js";
import { authSubject, type RequestContext } from "../http/requestContext.js";
import { logRateLimitRejection } from "../store/rateLimitLog.js";
import type { Db } from "../store/Store.js";
import { keyModelPrivacy, modelPrivacyAllows } from "./modelPrivacy.js";
import type { RateLimiter, TokenReservation } from "./RateLimiter.js";
import { limitClassFor, resolveLimit, type CallKind } from "./tiers.js";

/**
 * Admission of authenticated inference calls: the key's model-privacy setting, then the
 * rate-limit tables; refused calls are logged. A gateway key (many callers behind one key, whose
 * limits the gateway applies) passes the tables, the account window and the token limits; the
 * crypto RPC proxy's per-caller cap (`admitCalls`), which gateways do not relay, still holds.
 */
export class Limits {
  private readonly rejectionListeners: ((rejection: { tier: string; limitType: string; modelId: string | null }) => void)[] = [];

  constructor(
    private readonly db: Db,
    private readonly limiter: RateLimiter,
    private readonly now: () => number,
  ) {}

  /** Admits a call or throws 403 (privacy) / 429 (rate); returns the x-ratelimit-* headers to send. */
  admit(ctx: RequestContext, entry: ModelEntry, kind: CallKind): Record<string, string> {
    const auth = ctx.auth;
    if (!auth) return {};
    if (auth.kind === "apiKey") {
      const privacy = keyModelPrivacy(this.db, auth.apiKeyId);
      if (!modelPrivacyAllows(privacy, entry)) {
        throw new PermissionDeniedError(`This API key's modelPrivacy is ${privacy}; the model "${entry.id}" is ${entry.privacy}.`);
      }
    }
    if (auth.gateway) return {};
    const limitClass = limitClassFor(kind, entry);
    const limit = resolveLimit(auth.rateLimitTier, limitClass, auth.rateLimitOverrides);
    const decision = this.limiter.admit(subject(authSubject(auth), entry.id, limitClass), limit);
    if (!decision.allowed) {
      this.log(auth.accountId, auth.apiKeyId, entry.id, `${auth.rateLimitTier}:${limitClass}`, decision.exceeded!);
      const what = decision.exceeded === "RPM" ? `${limit.rpm} requests` : `${limit.tpm} tokens`;
      throw new RateLimitError(`Rate limit exceeded: this key may use ${what} per minute on ${entry.id}. Retry after x-ratelimit-reset-requests.`, decision.headers);
    }
    return decision.headers;
  }

  /** Admits a call to a paid endpoint that runs no model (`scope`: the endpoint) by the key's tier table; throws 429. */
  admitEndpoint(ctx: RequestContext, scope: string, limitClass: "augment"): Record<string, string> {
    const auth = ctx.auth;
    if (!auth || auth.gateway) return {};
    const limit = resolveLimit(auth.rateLimitTier, limitClass, auth.rateLimitOverrides);
    const decision = this.limiter.admit(subject(authSubject(auth), scope, limitClass), limit);
    if (!decision.allowed) {
      this.log(auth.accountId, auth.apiKeyId, null, `${auth.rateLimitTier}:${limitClass}`, decision.exceeded!);
      throw new RateLimitError(`Rate limit exceeded: this key may make ${limit.rpm} requests per minute to ${scope}. Retry after x-ratelimit-reset-requests.`, decision.headers);
    }
    return decision.headers;
  }

  /**
   * A call to an endpoint that runs no model and is not paid (API keys, billing, characters,
   * voices, stored responses, quotes): one window per caller across them, by the key's tier
   * (per-key overrides are for the model tiers and do not apply). Throws 429; returns the
   * x-ratelimit-* headers to send.
   */
  admitAccount(ctx: RequestContext): Record<string, string> {
    const auth = ctx.auth;
    if (!auth) return ctx.signIn ? this.admitWallet(ctx.signIn.address) : {};
    if (auth.gateway) return {};
    const limit = resolveLimit(auth.rateLimitTier, "account", null);
    const decision = this.limiter.admit(subject(authSubject(auth), "account", "account"), limit);
    if (!decision.allowed) {
      this.log(auth.accountId, auth.apiKeyId, null, `${auth.rateLimitTier}:account`, "RPM");
      throw new RateLimitError(
        `Rate limit exceeded: this key may make ${limit.rpm} requests per minute to the account endpoints. Retry after x-ratelimit-reset-requests.`,
        decision.headers,
      );
    }
    return decision.headers;
  }

  /**
   * A wallet signed in with SIGN-IN-WITH-X and no API key (its x402 balance and transactions):
   * the account window of a standard key, counted per wallet address.
   */
  private admitWallet(address: string): Record<string, string> {
    const limit = resolveLimit("standard", "account", null);
    const decision = this.limiter.admit(subject(`wallet:${address.toLowerCase()}`, "account", "account"), limit);
    if (!decision.allowed) {
      throw new RateLimitError(
        `Rate limit exceeded: a wallet may make ${limit.rpm} requests per minute to its balance and transactions. Retry after x-ratelimit-reset-requests.`,
        decision.headers,
      );
    }
    return decision.headers;
  }

  /**
   * A per-caller request cap outside the model tiers (the crypto RPC proxy's 100 per minute).
   * Returns the x-ratelimit-* headers of its window; throws 429 with those and
   * X-RateLimit-Limit/-Remaining/-Reset (the proxy's header names).
   */
  admitCalls(ctx: RequestContext, scope: string, rpm: number): Record<string, string> {
    const auth = ctx.auth;
    if (!auth) return {};
    const decision = this.limiter.admit(subject(authSubject(auth), scope, "calls"), { rpm });
    const proxyHeaders = {
      "X-RateLimit-Limit": String(rpm),
      "X-RateLimit-Remaining": decision.headers["x-ratelimit-remaining-requests"]!,
      "X-RateLimit-Reset": decision.headers["x-ratelimit-reset-requests"]!,
    };
    if (decision.allowed) return { ...decision.headers, ...proxyHeaders };
    this.log(auth.accountId, auth.apiKeyId, null, `${auth.rateLimitTier}:${scope}`, "RPM");
    throw new RateLimitError(`Rate limit exceeded: at most ${rpm} requests per minute on ${scope}`, { ...decision.headers, ...proxyHeaders, "X-RateLimit-Remaining": "0" });
  }

  /**
   * Holds a running request's most tokens (prompt + what it may generate) against its key's
   * TPM once the prompt is measured, or throws 429 when the tokens used and in flight have
   * reached the limit. Undefined for calls without a caller.
   */
  reserveTokens(ctx: RequestContext, entry: ModelEntry, kind: CallKind, tokens: number): TokenReservation | undefined {
    const auth = ctx.auth;
    if (!auth || auth.gateway) return undefined;
    const limitClass = limitClassFor(kind, entry);
    const limit = resolveLimit(auth.rateLimitTier, limitClass, auth.rateLimitOverrides);
    const decision = this.limiter.reserveTokens(subject(authSubject(auth), entry.id, limitClass), limit, tokens);
    if (decision.allowed) return decision.reservation;
    this.log(auth.accountId, auth.apiKeyId, entry.id, `${auth.rateLimitTier}:${limitClass}`, "TPM");
    throw new RateLimitError(
      `Rate limit exceeded: this key may use ${limit.tpm} tokens per minute on ${entry.id}, counting requests still running. Retry after x-ratelimit-reset-tokens.`,
      decision.headers,
    );
  }

  /** Tokens of a request that reserved none (it ended before its prompt was measured). */
  recordTokens(ctx: RequestContext, entry: ModelEntry, tokens: number): void {
    // Only text models have token limits.
    if (ctx.auth && !ctx.auth.gateway && tokens > 0) this.limiter.recordTokens(subject(authSubject(ctx.auth), entry.id, limitClassFor("chat", entry)), tokens);
  }

  /** The limits a key has on each model, with what is left of the current window. */
  describe(ctx: RequestContext, models: readonly ModelEntry[], kindOf: (entry: ModelEntry) => CallKind | undefined) {
    const auth = ctx.auth!;
    // A gateway key has no per-key limits to describe.
    if (auth.gateway) return [];
    return models.flatMap((entry) => {
      const kind = kindOf(entry);
      if (!kind) return [];
      const limitClass = limitClassFor(kind, entry);
      const limit = resolveLimit(auth.rateLimitTier, limitClass, auth.rateLimitOverrides);
      const state = this.limiter.peek(subject(authSubject(auth), entry.id, limitClass), limit);
      return [{ entry, limit, state }];
    });
  }

  /** Called for every refused call (rate limits and abuse blocks), after it is logged. */
  onRejection(listener: (rejection: { tier: string; limitType: string; modelId: string | null }) => void): void {
    this.rejectionListeners.push(listener);
  }

  log(accountId: string | null, apiKeyId: string | null, modelId: string | null, tier: string, limitType: string): void {
    logRateLimitRejection(this.db, { accountId, apiKeyId, modelId, tier, limitType, createdAt: this.now() });
    for (const listener of this.rejectionListeners) listener({ tier, limitType, modelId });
  }
}

/** One window per caller (key or wallet), model and class: a video model's queue and retrieve calls are counted apart. */
const subject = (caller: string, modelId: string, limitClass: string) => `${caller}\u0000${modelId}\u0000${limitClass}`;
