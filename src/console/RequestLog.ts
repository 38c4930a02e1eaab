import type { NextFunction, Request, Response } from "express";
import { CLIENT_CLOSED_REQUEST } from "../http/clientClosedRequest.js";

/** One finished API request as the live view shows it. Never the key, the body or the query string. */
export interface RequestLogEntry {
  /** Increases by one per request, so clients can tell new rows from old ones. */
  seq: number;
  at: number;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  model: string | null;
}

/**
 * A fixed-size ring of the most recent API requests, filled by an app-level middleware and read
 * by the live view. In memory only: it is a window on what happens now, not an audit log
 * (the usage table is that).
 */
export class RequestLog {
  private readonly entries: RequestLogEntry[] = [];
  private seq = 0;

  constructor(
    private readonly capacity = 50,
    private readonly now: () => number = Date.now,
  ) {}

  add(entry: Omit<RequestLogEntry, "seq">): void {
    this.entries.push({ seq: ++this.seq, ...entry });
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
  }

  /** Newest first. */
  recent(): RequestLogEntry[] {
    return [...this.entries].reverse();
  }

  /** Records requests under `prefix` when their response closes (finished or aborted). */
  middleware(prefix: string) {
    return (req: Request, res: Response, next: NextFunction) => {
      if (!req.path.startsWith(prefix)) {
        next();
        return;
      }
      const startedAt = this.now();
      // The path without the query string: query strings may carry ids a list need not show.
      const path = req.originalUrl.split("?")[0] ?? req.path;
      res.once("close", () => {
        const body = req.body as { model?: unknown } | undefined;
        const model = body && typeof body === "object" && typeof body.model === "string" ? body.model.slice(0, 200) : null;
        // 499 (client closed request) for a response the client abandoned.
        const status = res.writableFinished ? res.statusCode : CLIENT_CLOSED_REQUEST;
        this.add({ at: startedAt, method: req.method, path: path.slice(0, 200), status, durationMs: this.now() - startedAt, model });
      });
      next();
    };
  }
}
