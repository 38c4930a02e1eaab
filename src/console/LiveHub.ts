import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { Logger } from "../logger.js";
import { LiveClient } from "./LiveClient.js";
import type { MemoryBudgetStatus, ModelManager } from "../models/ModelManager.js";
import { findActiveKey } from "../store/apiKeys.js";
import type { Db } from "../store/Store.js";
import { liveModels, type LiveModel } from "./liveModels.js";
import type { RequestLog, RequestLogEntry } from "./RequestLog.js";

export const LIVE_PATH = "/api/v1/admin/live";

/** What the live view pushes: the whole picture each time (it is small), so a client never merges. */
export interface LiveSnapshot {
  type: "snapshot";
  at: string;
  models: LiveModel[];
  requests: RequestLogEntry[];
  /** The memory budget and what the loaded models use of it (limitBytes null: no budget). */
  budget: MemoryBudgetStatus;
}

export interface LiveHubOptions {
  db: Db;
  models: ModelManager;
  requestLog: RequestLog;
  logger: Logger;
  now?: () => number;
  /** How often the server looks for changes (ms). */
  pollMs?: number;
  /** How long a connection may stay unauthenticated (ms). */
  authTimeoutMs?: number;
}

/** How often live connections are pinged; one that has not answered by the next ping is cut. */
const HEARTBEAT_MS = 30_000;

/** Close codes in the private range: the console tells a wrong key from a dropped connection. */
export const CLOSE_UNAUTHORIZED = 4401;
export const CLOSE_FORBIDDEN = 4403;

/**
 * The console's live view: a WebSocket at /api/v1/admin/live on the API server. The client
 * sends `{"type":"auth","key":"…"}` first (never the URL: URLs land in logs); an admin key gets
 * a snapshot at once and another whenever models or recent requests change. The server polls
 * every `pollMs` and pushes only when the serialized snapshot differs, and only while someone
 * is connected.
 */
export class LiveHub {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 });
  private readonly clients = new Map<WebSocket, LiveClient>();
  private timer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private last = "";
  private closed = false;
  private readonly now: () => number;

  constructor(private readonly options: LiveHubOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Takes over upgrade requests for the live path on `server`; others are refused with 404. */
  attach(server: Server): void {
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? "").split("?")[0];
      if (path !== LIVE_PATH || this.closed) {
        socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
    });
  }

  private accept(ws: WebSocket): void {
    const timeout = setTimeout(() => ws.close(CLOSE_UNAUTHORIZED, 'send {"type":"auth","key":"<admin key>"} first'), this.options.authTimeoutMs ?? 5000);
    ws.once("message", (data) => {
      clearTimeout(timeout);
      let key: unknown;
      try {
        const message = JSON.parse(String(data)) as { type?: unknown; key?: unknown };
        key = message.type === "auth" ? message.key : undefined;
      } catch {
        key = undefined;
      }
      if (typeof key !== "string" || key.length === 0 || key.length > 512) {
        ws.close(CLOSE_UNAUTHORIZED, 'the first message must be {"type":"auth","key":"<admin key>"}');
        return;
      }
      const record = findActiveKey(this.options.db, key, this.now());
      if (!record) {
        ws.close(CLOSE_UNAUTHORIZED, "invalid, revoked or expired API key");
        return;
      }
      if (!record.operator) {
        ws.close(CLOSE_FORBIDDEN, "the live view is node-wide: it needs the node operator's API key");
        return;
      }
      const client = new LiveClient(ws);
      this.clients.set(ws, client);
      client.offer(() => JSON.stringify(this.snapshot()), true);
      this.startPolling();
      // The models page shows each model's memory: an operator watching asks for the estimates
      // (made once per process; a node without a memory budget makes them only when asked).
      void this.options.models.estimate().then(() => this.push());
    });
    ws.on("close", () => {
      clearTimeout(timeout);
      this.clients.delete(ws);
      if (this.clients.size === 0) this.stopPolling();
    });
    ws.on("error", (error) => this.options.logger.debug({ err: error }, "live view connection error"));
  }

  snapshot(): LiveSnapshot {
    const { models, budget } = this.options.models.status();
    return { type: "snapshot", at: new Date(this.now()).toISOString(), models: liveModels(models), requests: this.options.requestLog.recent(), budget };
  }

  private startPolling(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.push(), this.options.pollMs ?? 500);
    this.timer.unref();
    this.heartbeat = setInterval(() => {
      for (const [ws, client] of this.clients) if (!client.beat()) this.clients.delete(ws);
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private stopPolling(): void {
    clearInterval(this.timer);
    clearInterval(this.heartbeat);
    this.timer = undefined;
    this.heartbeat = undefined;
    this.last = "";
  }

  private push(): void {
    const snapshot = this.snapshot();
    // Compare without the timestamp, which changes every time.
    const key = JSON.stringify([snapshot.models, snapshot.requests, snapshot.budget]);
    const changed = key !== this.last;
    this.last = key;
    let text: string | undefined;
    // Unchanged, it still goes to a client that skipped one while backed up.
    for (const client of this.clients.values()) client.offer(() => (text ??= JSON.stringify(snapshot)), changed);
  }

  /** Shutdown: tells every client the server is going away (1001) and stops accepting. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopPolling();
    const closing = [...this.wss.clients].map(
      (ws) =>
        new Promise<void>((resolve) => {
          ws.once("close", () => resolve());
          ws.close(1001, "server shutting down");
          // A client that never answers the close handshake is cut.
          setTimeout(() => {
            ws.terminate();
            resolve();
          }, 1000).unref();
        }),
    );
    await Promise.all(closing);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
