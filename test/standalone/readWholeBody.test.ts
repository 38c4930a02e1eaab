import { randomBytes } from "node:crypto";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readWholeBody } from "../../src/http/readWholeBody.js";

const LIMIT = 1 << 20;

/** A real HTTP server answering what readWholeBody made of each request: the body's length and first bytes, or the error's status and type. */
let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((req, res) => {
    readWholeBody(req, LIMIT).then(
      (body) => res.end(JSON.stringify({ length: body.length, sha: body.toString("base64").slice(0, 24) })),
      (error: { status?: number; type?: string }) => res.writeHead(error.status ?? 500).end(JSON.stringify({ type: error.type })),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Sends `pieces` one write each, with these headers; the server's answer. */
function send(pieces: Buffer[], headers: Record<string, string | number> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ port, method: "POST", headers }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on("error", reject);
    for (const piece of pieces) req.write(piece);
    req.end();
  });
}

const expected = (body: Buffer) => ({ length: body.length, sha: body.toString("base64").slice(0, 24) });

describe("readWholeBody", () => {
  it("reads a body sent in many pieces whole, joined in order", async () => {
    const body = randomBytes(LIMIT - 10);
    const pieces = Array.from({ length: 40 }, (_, i) => body.subarray((i * body.length) / 40, ((i + 1) * body.length) / 40));
    expect(await send(pieces)).toEqual({ status: 200, body: expected(body) });
  });

  it.each([
    ["gzip", gzipSync],
    ["deflate", deflateSync],
    ["br", brotliCompressSync],
  ] as const)("decompresses a %s body", async (encoding, compress) => {
    const body = Buffer.from("--boundary\r\n".repeat(5000));
    expect(await send([compress(body)], { "content-encoding": encoding })).toEqual({ status: 200, body: expected(body) });
  });

  it("refuses a body whose Content-Length is over the limit before reading it, and one that grows past it while read", async () => {
    expect(await send([Buffer.alloc(LIMIT + 1)], { "content-length": LIMIT + 1 })).toEqual({ status: 413, body: { type: "entity.too.large" } });
    // Chunked: no length announced.
    expect(await send([Buffer.alloc(LIMIT), Buffer.alloc(10)])).toEqual({ status: 413, body: { type: "entity.too.large" } });
  });

  it("counts the limit on the decompressed bytes (a small gzip of many zeros is refused)", async () => {
    const bomb = gzipSync(Buffer.alloc(20 * LIMIT));
    expect(bomb.length).toBeLessThan(LIMIT / 10);
    expect(await send([bomb], { "content-encoding": "gzip" })).toEqual({ status: 413, body: { type: "entity.too.large" } });
  });

  it("answers an unknown encoding with a 415 and a broken compressed body with a 400", async () => {
    expect(await send([Buffer.from("x")], { "content-encoding": "compress" })).toEqual({ status: 415, body: { type: "encoding.unsupported" } });
    expect(await send([Buffer.from("not gzip at all")], { "content-encoding": "gzip" })).toEqual({ status: 400, body: { type: "encoding.invalid" } });
  });

  it("fails a body whose client goes away before its end", async () => {
    let settle!: (outcome: { type?: string }) => void;
    const outcome = new Promise<{ type?: string }>((resolve) => (settle = resolve));
    const watcher = createServer((req, res) => {
      readWholeBody(req, LIMIT).then(
        () => settle({}),
        (error: { type?: string }) => {
          settle({ type: error.type });
          res.destroy();
        },
      );
    });
    await new Promise<void>((resolve) => watcher.listen(0, "127.0.0.1", resolve));
    try {
      const req = request({ port: (watcher.address() as AddressInfo).port, method: "POST", headers: { "content-length": 1000 } });
      req.on("error", () => undefined);
      req.write(Buffer.alloc(100));
      setTimeout(() => req.destroy(), 50);
      expect(await outcome).toEqual({ type: "request.aborted" });
    } finally {
      watcher.close();
    }
  });
});
