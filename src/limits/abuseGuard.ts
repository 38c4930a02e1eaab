import { createHash } from "node:crypto";
import type { Express, NextFunction, Request, Response } from "express";
import { RateLimitError } from "../errors.js";
import { BoundedMap } from "./BoundedMap.js";

export const ABUSE_MAX_FAILURES = 20;
export const ABUSE_WINDOW_MS = 30_000;
export const ABUSE_BLOCK_MS = 30_000;
/** Callers tracked at once (failure counts and blocks each); past this the least recently seen are forgotten. */
export const ABUSE_MAX_SUBJECTS = 10_000;

export type KeyStanding = "unknown" | "known" | "gateway";

export interface AbuseGuardOptions {
  now: () => number;
  /**
   * What a sent bearer secret (by its SHA-256) is: a key of this node (only then is it an
   * identity), an active gateway key (many callers behind one key: never counted or blocked), or
   * unknown.
   */
  keyStanding: (keyHash: string) => KeyStanding;
  onBlock?: (subject: string, apiKeyHash: string | null) => void;
  maxSubjects?: number;
}

/**
 * Abuse protection from the brief: more than 20 failed (non-2xx) requests within 30 seconds
 * blocks the caller for 30 seconds. Failures with a key of this node count against that key
 * (from any address); failures with no key or an unknown one count against the client address,
 * since a made-up key is no identity. A blocked key is refused from every address; a blocked
 * address is refused unless the request carries a key of this node. A gateway key is neither
 * counted nor blocked (docs/scaling.md). State is bounded: failure
 * counts and blocks expire with their window and at most `maxSubjects` of each are kept.
 */
export class AbuseGuard {
  private readonly failures: BoundedMap<number[]>;
  private readonly blockedUntil: BoundedMap<number>;

  constructor(private readonly options: AbuseGuardOptions) {
    const maxEntries = options.maxSubjects ?? ABUSE_MAX_SUBJECTS;
    this.failures = new BoundedMap<number[]>({
      maxEntries,
      sweepEveryMs: ABUSE_WINDOW_MS,
      now: options.now,
      isExpired: (times, now) => now - times[times.length - 1]! >= ABUSE_WINDOW_MS,
    });
    this.blockedUntil = new BoundedMap<number>({ maxEntries, sweepEveryMs: ABUSE_BLOCK_MS, now: options.now, isExpired: (until, now) => now >= until });
  }

  /** Entries held (tests check the state stays bounded). */
  size(): { failures: number; blocked: number } {
    return { failures: this.failures.size, blocked: this.blockedUntil.size };
  }

  middleware() {
    return (req: Request, res: Response, next: NextFunction) => {
      const keyHash = bearerHash(req);
      const address = `ip:${req.ip ?? "unknown"}`;
      let standing: KeyStanding | undefined;
      const standingOf = () => (standing ??= keyHash === null ? "unknown" : this.options.keyStanding(keyHash));
      const isKnown = () => standingOf() !== "unknown";
      // A gateway relays many callers and applies their limits itself: their failures are no one
      // caller's abuse. Its standing is looked up only where it matters (a block, a failure), so a
      // request that succeeds costs no lookup here.
      const isGateway = () => standingOf() === "gateway";
      const storedKeyBlock = keyHash === null ? undefined : this.blockedUntil.get(`key:${keyHash}`);
      // A key made a gateway key while blocked is let through at once.
      const keyBlock = storedKeyBlock !== undefined && !isGateway() ? storedKeyBlock : undefined;
      const addressBlock = keyBlock === undefined ? this.blockedUntil.get(address) : undefined;
      const until = keyBlock ?? (addressBlock !== undefined && !isKnown() ? addressBlock : undefined);
      if (until !== undefined) {
        const wait = Math.max(1, Math.ceil((until - this.options.now()) / 1000));
        throw new RateLimitError(`Too many failed requests. Please wait 30 seconds before trying again (${wait} s left).`, {
          "retry-after": String(wait),
          "x-ratelimit-reset-requests": String(Math.ceil(until / 1000)),
          "x-ratelimit-type": keyBlock !== undefined ? "api_key" : "user",
        });
      }
      // Counted when the status is sent, not on "finish": a client that has read a failure must
      // find it counted when its next request arrives ("finish" can come after that read).
      onStatusSent(res, (status) => {
        if (status >= 200 && status < 300) return;
        if (isGateway()) return;
        if (isKnown()) this.recordFailure(`key:${keyHash}`, keyHash);
        else this.recordFailure(address, null);
      });
      next();
    };
  }

  private recordFailure(subject: string, keyHash: string | null): void {
    const now = this.options.now();
    const recent = (this.failures.get(subject) ?? []).filter((t) => now - t < ABUSE_WINDOW_MS);
    recent.push(now);
    if (recent.length > ABUSE_MAX_FAILURES) {
      this.failures.delete(subject);
      this.blockedUntil.set(subject, now + ABUSE_BLOCK_MS);
      this.options.onBlock?.(subject, keyHash);
    } else {
      this.failures.set(subject, recent);
    }
  }
}

/** The guard of an app made by createApp (tests read its state size). */
export function abuseGuardOf(app: Express): AbuseGuard {
  return app.locals.abuseGuard as AbuseGuard;
}

/** Calls `listener` with the status once, as the response head is written (explicitly or by the first write or end). */
function onStatusSent(res: Response, listener: (status: number) => void): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: Response, ...args: Parameters<Response["writeHead"]>) {
    res.writeHead = writeHead;
    listener(typeof args[0] === "number" ? args[0] : res.statusCode);
    return writeHead.apply(this, args);
  } as Response["writeHead"];
}

/** A key is identified by a hash of what was sent (valid or not), never by the secret itself. */
function bearerHash(req: Request): string | null {
  const match = /^Bearer\s+(\S+)/i.exec(req.get("authorization") ?? "");
  return match ? createHash("sha256").update(match[1]!).digest("hex") : null;
}
