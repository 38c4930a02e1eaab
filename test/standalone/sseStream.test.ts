import express from "express";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidRequestError } from "../../src/errors.js";
import { SseStream } from "../../src/http/sse.js";

/**
 * The SSE framing, on a bare Express app (no Hearth server): each route drives one SseStream
 * the way the chat service does, and the test reads the bytes a client gets.
 */
const app = express();
app.get("/objects", (_req, res) => {
  const sse = new SseStream(res);
  sse.send({ id: "c1", choices: [{ index: 0, delta: { content: "Hel\nlo" } }] });
  sse.send({ id: "c1", choices: [] });
  sse.end();
});
app.get("/text", (_req, res) => {
  const sse = new SseStream(res);
  sse.send("one\ntwo\r\nthree\rfour");
  sse.end();
  // Anything after the end is dropped, not written to a closed response.
  sse.send({ late: true });
  sse.end();
});
app.get("/empty", (_req, res) => new SseStream(res).end());
app.get("/fail-midstream/:format", (req, res) => {
  // SseStream reads only the error format from the request context.
  if (req.params.format === "standard") res.locals.ctx = { errorFormat: "standard" } as never;
  const sse = new SseStream(res);
  sse.send({ n: 1 });
  sse.fail(new InvalidRequestError("bad thing"));
});
app.get("/started", (_req, res) => {
  const sse = new SseStream(res);
  const before = sse.started;
  sse.send({ n: 1 });
  const after = sse.started;
  sse.send({ before, after });
  sse.end();
});

let base: string;
let server: ReturnType<typeof app.listen>;
beforeAll(async () => {
  server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const get = async (path: string) => {
  const res = await fetch(base + path);
  return { status: res.status, headers: res.headers, body: await res.text() };
};

describe("SseStream", () => {
  it("writes each object as one data line (JSON escapes its line breaks) and ends with [DONE]", async () => {
    const { status, headers, body } = await get("/objects");
    expect(status).toBe(200);
    expect(headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(headers.get("cache-control")).toBe("no-cache, no-transform");
    expect(headers.get("x-accel-buffering")).toBe("no");
    expect(body).toBe('data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hel\\nlo"}}]}\n\ndata: {"id":"c1","choices":[]}\n\ndata: [DONE]\n\n');
  });

  it("splits a multi-line string on any line break into one data field per line", async () => {
    expect((await get("/text")).body).toBe("data: one\ndata: two\ndata: three\ndata: four\n\ndata: [DONE]\n\n");
  });

  it("an empty stream is still a 200 event stream with [DONE]", async () => {
    const { status, headers, body } = await get("/empty");
    expect([status, headers.get("content-type"), body]).toEqual([200, "text/event-stream; charset=utf-8", "data: [DONE]\n\n"]);
  });

  it("an error after the first event goes into the stream in the provider's shape, then [DONE]", async () => {
    const { status, body } = await get("/fail-midstream/provider");
    expect(status).toBe(200);
    const events = body.split("\n\n").filter(Boolean);
    expect(events).toHaveLength(3);
    expect(events[0]).toBe('data: {"n":1}');
    expect(JSON.parse(events[1]!.slice("data: ".length))).toEqual({ error: { error: "bad thing", details: {} } });
    expect(events[2]).toBe("data: [DONE]");
  });

  it("with the standard error format the stream carries the standard's {error: {message, type, ...}} body", async () => {
    const events = (await get("/fail-midstream/standard")).body.split("\n\n").filter(Boolean);
    expect(JSON.parse(events[1]!.slice("data: ".length))).toMatchObject({ error: { message: "bad thing", type: "invalid_request_error" } });
    expect(events[2]).toBe("data: [DONE]");
  });

  it("started turns true with the first event", async () => {
    expect((await get("/started")).body).toContain('data: {"before":false,"after":true}');
  });
});
