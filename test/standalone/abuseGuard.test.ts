import express from "express";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RateLimitError } from "../../src/errors.js";
import { AbuseGuard } from "../../src/limits/abuseGuard.js";

/** The guard in front of a route that always fails (401), as a stranger's requests do. */
let now = 1_000_000;
const guard = new AbuseGuard({ now: () => now, keyStanding: () => "unknown", maxSubjects: 10 });
const app = express();
app.use(guard.middleware());
app.use((_req, res) => void res.status(401).end());
app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
  res.status(error instanceof RateLimitError ? 429 : 500).end();
});
let server: ReturnType<typeof app.listen>;
let port = 0;
beforeAll(
  () =>
    new Promise<void>((resolve) => {
      server = app.listen(0, "127.0.0.1", () => {
        port = (server.address() as AddressInfo).port;
        resolve();
      });
    }),
);
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** One request from a given loopback address (all of 127/8 reaches the server). */
const from = (localAddress: string) =>
  new Promise<number>((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/", localAddress, headers: { authorization: "Bearer made-up", connection: "close" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
    });
    req.on("error", reject);
    req.end();
  });

describe("AbuseGuard state", () => {
  it("counts failures per client address, keeps at most its bound of addresses, and forgets them after the window", async () => {
    for (let i = 2; i < 42; i++) expect(await from(`127.0.0.${i}`)).toBe(401);
    expect(guard.size()).toEqual({ failures: 10, blocked: 0 });
    // 21 failures from one address block it, and only it.
    for (let i = 0; i < 21; i++) await from("127.0.1.1");
    expect(await from("127.0.1.1")).toBe(429);
    expect(await from("127.0.1.2")).toBe(401);
    expect(guard.size().blocked).toBe(1);
    now += 30_000;
    expect(await from("127.0.1.1")).toBe(401);
    expect(guard.size()).toEqual({ failures: 1, blocked: 0 });
  });
});

describe("AbuseGuard timing", () => {
  it("counts a failure as its status is sent, before the client can read it (not when the response finishes)", async () => {
    const timed = new AbuseGuard({ now: () => now, keyStanding: () => "unknown" });
    // The guard's state right after each response's status went out, read synchronously.
    const seen: { failures: number; blocked: number }[] = [];
    const timedApp = express();
    timedApp.use(timed.middleware());
    timedApp.get("/fail", (_req, res) => {
      res.status(401).end();
      seen.push(timed.size());
    });
    timedApp.get("/stream", (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: {}\n\n");
      seen.push(timed.size());
      res.end();
    });
    timedApp.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(error instanceof RateLimitError ? 429 : 500).end();
    });
    const listening = timedApp.listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => listening.once("listening", () => resolve()));
    const base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    try {
      expect((await fetch(`${base}/fail`)).status).toBe(401);
      expect(seen.at(-1)).toEqual({ failures: 1, blocked: 0 });
      expect((await fetch(`${base}/stream`)).status).toBe(200);
      expect(seen.at(-1)).toEqual({ failures: 1, blocked: 0 });
      for (let i = 0; i < 20; i++) expect((await fetch(`${base}/fail`)).status).toBe(401);
      // The 21st failure blocked the address as it was sent, so the very next request is refused.
      expect(seen.at(-1)).toEqual({ failures: 0, blocked: 1 });
      expect((await fetch(`${base}/fail`)).status).toBe(429);
    } finally {
      await new Promise<void>((resolve) => listening.close(() => resolve()));
    }
  });
});
