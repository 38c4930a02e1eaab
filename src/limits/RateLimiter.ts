import { BoundedMap } from "./BoundedMap.js";
import type { Limit } from "./tiers.js";

const WINDOW_MS = 60_000;
/** Callers (key, model and class) tracked at once; past this the least recently seen are forgotten. */
const MAX_SUBJECTS = 100_000;

interface Window {
  start: number;
  requests: number;
  /** Tokens of the requests that ended in this window. */
  tokens: number;
  /** Tokens reserved by requests still running (kept across windows until they settle). */
  inFlight: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Which limit refused the request. */
  exceeded?: "RPM" | "TPM";
  headers: Record<string, string>;
}

/** Tokens held for one running request; settling (or releasing) more than once does nothing. */
export interface TokenReservation {
  /** The x-ratelimit-* headers with this reservation counted. */
  headers: Record<string, string>;
  /** Replaces the reservation by what the request used (0 when it failed before producing anything). */
  settle(actualTokens: number): void;
}

/**
 * Fixed one-minute windows per key and model, in memory (a single node; counters start
 * afresh on restart). Requests count when admitted. Tokens are reserved when the prompt is
 * measured (prompt + the most the request may generate) and settle to what was used when the
 * request ends, so concurrent requests see each other's tokens. A window is forgotten once
 * it is over and nothing of it is in flight; at most MAX_SUBJECTS windows are kept.
 */
export class RateLimiter {
  private readonly windows: BoundedMap<Window>;

  constructor(
    private readonly now: () => number,
    maxSubjects = MAX_SUBJECTS,
  ) {
    this.windows = new BoundedMap<Window>({
      maxEntries: maxSubjects,
      sweepEveryMs: WINDOW_MS,
      now,
      isExpired: (window, now) => window.inFlight === 0 && now >= window.start + WINDOW_MS,
      canEvict: (window) => window.inFlight === 0,
    });
  }

  admit(subject: string, limit: Limit): RateDecision {
    const window = this.windowFor(subject);
    let exceeded: RateDecision["exceeded"];
    if (window.requests >= limit.rpm) exceeded = "RPM";
    else if (limit.tpm !== undefined && window.tokens + window.inFlight >= limit.tpm) exceeded = "TPM";
    if (!exceeded) window.requests++;
    return { allowed: !exceeded, exceeded, headers: this.headers(window, limit, exceeded !== undefined) };
  }

  /**
   * Reserves `tokens` for a running request, or refuses when the tokens used and in flight
   * have reached the limit. The request that crosses the limit is still admitted (as one
   * request at a time always was), so a burst ends at most one reservation past it.
   */
  reserveTokens(subject: string, limit: Limit, tokens: number): { allowed: true; reservation: TokenReservation } | { allowed: false; headers: Record<string, string> } {
    const window = this.windowFor(subject);
    if (limit.tpm !== undefined && window.tokens + window.inFlight >= limit.tpm) return { allowed: false, headers: this.headers(window, limit, true) };
    const held = Math.max(0, Math.ceil(tokens));
    window.inFlight += held;
    let settled = false;
    return {
      allowed: true,
      reservation: {
        headers: this.headers(window, limit, false),
        settle: (actualTokens) => {
          if (settled) return;
          settled = true;
          // The window may have rolled over meanwhile: the in-flight count moved with it.
          const current = this.windowFor(subject);
          current.inFlight = Math.max(0, current.inFlight - held);
          current.tokens += Math.max(0, actualTokens);
        },
      },
    };
  }

  /** Tokens of a request that reserved nothing, counted when it ends. */
  recordTokens(subject: string, tokens: number): void {
    this.windowFor(subject).tokens += tokens;
  }

  /** Current state without admitting anything (for GET /api_keys/rate_limits). */
  peek(subject: string, limit: Limit): { remainingRequests: number; remainingTokens: number | null; resetAt: number } {
    const window = this.windowFor(subject);
    return {
      remainingRequests: Math.max(0, limit.rpm - window.requests),
      remainingTokens: limit.tpm === undefined ? null : Math.max(0, limit.tpm - window.tokens - window.inFlight),
      resetAt: window.start + WINDOW_MS,
    };
  }

  /** How many callers' windows are held in memory (tests check it stays bounded). */
  get size(): number {
    return this.windows.size;
  }

  private windowFor(subject: string): Window {
    const now = this.now();
    const start = now - (now % WINDOW_MS);
    let window = this.windows.get(subject);
    if (!window) {
      window = { start, requests: 0, tokens: 0, inFlight: 0 };
      this.windows.set(subject, window);
    } else if (now >= window.start + WINDOW_MS) {
      Object.assign(window, { start, requests: 0, tokens: 0 });
    }
    return window;
  }

  private headers(window: Window, limit: Limit, enforced: boolean): Record<string, string> {
    const resetAt = window.start + WINDOW_MS;
    const headers: Record<string, string> = {
      "x-ratelimit-limit-requests": String(limit.rpm),
      "x-ratelimit-remaining-requests": String(Math.max(0, limit.rpm - window.requests)),
      "x-ratelimit-reset-requests": String(Math.ceil(resetAt / 1000)),
    };
    if (limit.tpm !== undefined) {
      headers["x-ratelimit-limit-tokens"] = String(limit.tpm);
      headers["x-ratelimit-remaining-tokens"] = String(Math.max(0, limit.tpm - window.tokens - window.inFlight));
      headers["x-ratelimit-reset-tokens"] = String(Math.max(0, Math.ceil((resetAt - this.now()) / 1000)));
    }
    if (enforced) headers["x-ratelimit-type"] = "api_key";
    return headers;
  }
}
