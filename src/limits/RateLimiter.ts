import type { Limit } from "./tiers.js";

const WINDOW_MS = 60_000;

interface Window {
  start: number;
  requests: number;
  tokens: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Which limit refused the request. */
  exceeded?: "RPM" | "TPM";
  headers: Record<string, string>;
}

/**
 * Fixed one-minute windows per key and model, in memory (a single node; counters start
 * afresh on restart). Requests count when admitted; tokens count when the request settles.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly now: () => number) {}

  admit(subject: string, limit: Limit): RateDecision {
    const window = this.windowFor(subject);
    let exceeded: RateDecision["exceeded"];
    if (window.requests >= limit.rpm) exceeded = "RPM";
    else if (limit.tpm !== undefined && window.tokens >= limit.tpm) exceeded = "TPM";
    if (!exceeded) window.requests++;
    return { allowed: !exceeded, exceeded, headers: this.headers(window, limit, exceeded !== undefined) };
  }

  recordTokens(subject: string, tokens: number): void {
    this.windowFor(subject).tokens += tokens;
  }

  /** Current state without admitting anything (for GET /api_keys/rate_limits). */
  peek(subject: string, limit: Limit): { remainingRequests: number; remainingTokens: number | null; resetAt: number } {
    const window = this.windowFor(subject);
    return {
      remainingRequests: Math.max(0, limit.rpm - window.requests),
      remainingTokens: limit.tpm === undefined ? null : Math.max(0, limit.tpm - window.tokens),
      resetAt: window.start + WINDOW_MS,
    };
  }

  private windowFor(subject: string): Window {
    const now = this.now();
    let window = this.windows.get(subject);
    if (!window || now >= window.start + WINDOW_MS) {
      window = { start: now - (now % WINDOW_MS), requests: 0, tokens: 0 };
      this.windows.set(subject, window);
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
      headers["x-ratelimit-remaining-tokens"] = String(Math.max(0, limit.tpm - window.tokens));
      headers["x-ratelimit-reset-tokens"] = String(Math.max(0, Math.ceil((resetAt - this.now()) / 1000)));
    }
    if (enforced) headers["x-ratelimit-type"] = "api_key";
    return headers;
  }
}
