import { request } from "node:http";
import { Writable } from "node:stream";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { createLogger } from "../../src/logger.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * --idle-gc-ms: once no request has been in flight that long, the node gives back the heap its
 * requests grew (a young collection, then a full one 5.5 s later), logs it at debug and counts it
 * in GET /metrics. The log is read without a request, since a request would end the quiet spell.
 */
let server: TestServer;
const logged: { msg: string; heapMiB?: [number, number]; ms?: number; time: number }[] = [];

beforeAll(async () => {
  server = await startTestServer({
    config: { idleGcMs: 50 },
    logger: createLogger("debug", { destination: new Writable({ write: (chunk: Buffer, _encoding, done) => done(void logged.push(JSON.parse(chunk.toString()))) }) }),
  });
});
afterAll(() => server.stop());

const collections = () => logged.filter((line) => line.msg === "idle garbage collection");

it("collects once the node has been quiet, not while a request is in flight, and counts it", { timeout: 30_000 }, async () => {
  // The start counts as activity, but a request begun at once (its body still arriving) keeps the
  // node busy past the whole collection's time (the young collection at 50 ms, the full one 5.5 s
  // later): nothing is collected.
  const upload = request(`${server.baseUrl}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" } });
  upload.on("error", () => {});
  upload.write('{"model": "tiny-chat", "messages": [');
  await new Promise((resolve) => setTimeout(resolve, 6_500));
  expect(collections()).toHaveLength(0);
  const answered = new Promise<number>((resolve) => upload.once("response", (response) => resolve(response.resume().statusCode!)));
  upload.end("]}");
  expect(await answered).toBe(400);
  const closedAt = Date.now();

  await vi.waitFor(() => expect(collections()).toHaveLength(1), { timeout: 15_000, interval: 100 });
  const collection = collections()[0]!;
  // A young collection at the quiet spell, the full one 5.5 s later (the client saw the answer
  // after the server closed the response, so the margin is for that).
  expect(collection.time - closedAt).toBeGreaterThanOrEqual(4_500);
  expect(collection.ms).toBeGreaterThan(0);

  const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.adminKey}` } })).text();
  expect(Number(/^hearth_idle_gc_seconds_count (\S+)/m.exec(metrics)?.[1])).toBe(1);
});
