import { getHeapStatistics } from "node:v8";
import type { Express, Request, RequestHandler, Response } from "express";
import { ApiError, RateLimitError } from "../errors.js";
import { formatBytes } from "./formatBodyBytes.js";
import { authSubject } from "./requestContext.js";

declare module "express-serve-static-core" {
  interface Locals {
    /** Set once a request's body has been admitted to the BodyBudget (a route may have two parsers). */
    bodyAdmitted?: boolean;
  }
}

/**
 * Request bodies in memory at once, bounded. Each body is read whole (JSON is parsed from one
 * string, an upload is one Buffer) and stays referenced until its response ends, so a caller that
 * opens many uploads at once, or sends each but its last byte and waits, holds that many bodies:
 * 140 JSON bodies of 24 MB exhausted the JavaScript heap (a fatal error, every request lost).
 *
 * A body is admitted before it is read, for its Content-Length (or the route's limit when it is
 * sent chunked, without one), and counted until its response has ended or its connection closed.
 * A file the node fetches from a URL the request names counts the same way (`ctx.holdBytes`).
 * One caller (an API key, else the client address) may hold a quarter of the budget, so one
 * client's burst of uploads does not refuse everyone else's requests; past its share it gets a
 * 429, past the whole budget anyone gets a 503, both with a Retry-After. A gateway key has no
 * share of its own: many callers arrive through it.
 */
export class BodyBudget {
  private heldBytes = 0;
  private readonly heldByCaller = new Map<string, number>();
  readonly perCallerBytes: number;

  constructor(readonly totalBytes: number) {
    this.perCallerBytes = Math.floor(totalBytes / 4);
  }

  /** Bytes held now (all callers, then the one given). */
  held(caller?: string): number {
    return caller === undefined ? this.heldBytes : (this.heldByCaller.get(caller) ?? 0);
  }

  /**
   * Holds `bytes` for `caller`: a release function (idempotent), or the error to answer with.
   * A body larger than the caller's share is still admitted when the caller holds nothing (the
   * largest body a route accepts must always be readable by an idle caller).
   */
  tryHold(caller: string | null, bytes: number): (() => void) | ApiError {
    const callerHeld = caller === null ? 0 : (this.heldByCaller.get(caller) ?? 0);
    if (callerHeld > 0 && callerHeld + bytes > this.perCallerBytes) {
      return new RateLimitError(
        `Too many request bodies in flight from this caller: ${formatBytes(callerHeld)} held (bodies, and files fetched for them) of the ${formatBytes(this.perCallerBytes)} one caller may have at once. Retry once an earlier request has finished.`,
        { "retry-after": "1" },
      );
    }
    if (this.heldBytes > 0 && this.heldBytes + bytes > this.totalBytes) {
      return new ApiError(
        503,
        `The server is reading other requests' bodies (${formatBytes(this.heldBytes)} held; it reads at most ${formatBytes(this.totalBytes)} at once). Please try again shortly.`,
        {
          headers: { "retry-after": "1" },
        },
      );
    }
    this.heldBytes += bytes;
    if (caller !== null) this.heldByCaller.set(caller, callerHeld + bytes);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.heldBytes -= bytes;
      if (caller === null) return;
      const left = (this.heldByCaller.get(caller) ?? 0) - bytes;
      if (left > 0) this.heldByCaller.set(caller, left);
      else this.heldByCaller.delete(caller);
    };
  }

  /**
   * Admits the body of `req` (at most `limit` bytes, the route's) before a parser reads it: an
   * error to answer with, or undefined when it may be read. Requests without a body, bodies
   * over the limit (the parser answers 413 without reading them) and a request already admitted
   * (a route with two parsers) pass.
   */
  admit(req: Request, res: Response, limit: number): ApiError | undefined {
    if (res.locals.bodyAdmitted) return undefined;
    const bytes = announcedBodyBytes(req, limit);
    if (bytes === 0) return undefined;
    const refusal = this.holdFor(req, res, bytes);
    if (!refusal) res.locals.bodyAdmitted = true;
    return refusal;
  }

  /** Holds `bytes` for the request until its response has ended: the error to answer with past the budget. */
  holdFor(req: Request, res: Response, bytes: number): ApiError | undefined {
    const release = this.tryHold(callerOf(req, res), bytes);
    if (release instanceof ApiError) return release;
    // "close" comes once the response has been sent or its connection is gone, whichever is first.
    res.once("close", release);
    return undefined;
  }

  /**
   * Gives each request's context `holdBytes`: what a request reads into memory besides its body
   * (a file fetched from a URL it names) counts against the same budget, until its response ends.
   */
  contextHolds(): RequestHandler {
    return (req, res, next) => {
      res.locals.ctx.holdBytes = (bytes) => {
        const refusal = this.holdFor(req, res, bytes);
        if (refusal) throw refusal;
      };
      next();
    };
  }
}

/** The app's body budget (tests watch what it holds). */
export function bodyBudgetOf(app: Express): BodyBudget {
  return app.locals.bodyBudget as BodyBudget;
}

/** What a body will take: its Content-Length; the route's limit when chunked; 0 without a body or past the limit. */
function announcedBodyBytes(req: Request, limit: number): number {
  const length = req.headers["content-length"];
  if (length !== undefined) {
    const bytes = Number(length);
    return Number.isFinite(bytes) && bytes <= limit ? bytes : 0;
  }
  return req.headers["transfer-encoding"] !== undefined ? limit : 0;
}

/**
 * The caller a body counts against: its API key or wallet once authenticated (as rate limits
 * count), else its address; null for a gateway key, which carries many callers and has no one
 * caller's share (the whole budget still bounds it).
 */
function callerOf(req: Request, res: Response): string | null {
  const auth = res.locals.ctx?.auth;
  if (auth?.gateway) return null;
  return auth ? `auth:${authSubject(auth)}` : `ip:${req.ip ?? "unknown"}`;
}

/**
 * The default budget: an eighth of the JavaScript heap. A JSON body is held as its text and as
 * the parsed object (twice its bytes, four times for text outside Latin-1, which V8 stores in two
 * bytes a character), so the budget's bodies fill at most half the heap.
 */
export function defaultBodyBudgetBytes(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 8);
}
