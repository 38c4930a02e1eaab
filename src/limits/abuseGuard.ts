import { createHash } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import { RateLimitError } from "../errors.js";

export const ABUSE_MAX_FAILURES = 20;
export const ABUSE_WINDOW_MS = 30_000;
export const ABUSE_BLOCK_MS = 30_000;

/**
 * Abuse protection from the brief: more than 20 failed (non-2xx) requests within 30 seconds
 * from one key (or one IP when no key is sent) blocks that caller for 30 seconds.
 */
export class AbuseGuard {
  private readonly failures = new Map<string, number[]>();
  private readonly blockedUntil = new Map<string, number>();

  constructor(
    private readonly now: () => number,
    private readonly onBlock: (subject: string, apiKeyHash: string | null) => void = () => {},
  ) {}

  middleware() {
    return (req: Request, res: Response, next: NextFunction) => {
      const { subject, keyHash } = identify(req);
      const until = this.blockedUntil.get(subject);
      if (until !== undefined && this.now() < until) {
        const wait = Math.ceil((until - this.now()) / 1000);
        throw new RateLimitError(`Too many failed requests. Please wait 30 seconds before trying again (${wait} s left).`, {
          "retry-after": String(wait),
          "x-ratelimit-type": keyHash ? "api_key" : "user",
        });
      }
      res.once("finish", () => {
        if (res.statusCode >= 200 && res.statusCode < 300) return;
        this.recordFailure(subject, keyHash);
      });
      next();
    };
  }

  private recordFailure(subject: string, keyHash: string | null): void {
    const now = this.now();
    const recent = (this.failures.get(subject) ?? []).filter((t) => now - t < ABUSE_WINDOW_MS);
    recent.push(now);
    this.failures.set(subject, recent);
    if (recent.length > ABUSE_MAX_FAILURES) {
      this.blockedUntil.set(subject, now + ABUSE_BLOCK_MS);
      this.failures.delete(subject);
      this.onBlock(subject, keyHash);
    }
  }
}

/** A key is identified by a hash of what was sent (valid or not), never by the secret itself. */
function identify(req: Request): { subject: string; keyHash: string | null } {
  const match = /^Bearer\s+(\S+)/i.exec(req.get("authorization") ?? "");
  if (match) {
    const keyHash = createHash("sha256").update(match[1]!).digest("hex");
    return { subject: `key:${keyHash}`, keyHash };
  }
  return { subject: `ip:${req.ip}`, keyHash: null };
}
