import { Writable } from "node:stream";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { createLogger } from "../../src/logger.js";
import { startTestServer, type TestServer } from "../helpers/testServer.js";

/**
 * The node's stall watch (--stall-warn-ms): when the event loop is held, the log names the
 * requests in flight, and GET /metrics counts it. The test server runs in this process, so
 * holding this thread holds the node's loop, as a slow parse inside a request would.
 */
let server: TestServer;
const logged: string[] = [];

beforeAll(async () => {
  server = await startTestServer({
    config: { stallWarnMs: 150 },
    logger: createLogger("warn", { destination: new Writable({ write: (chunk: Buffer, _encoding, done) => done(void logged.push(chunk.toString())) }) }),
  });
  // The watch starts once the backends are prepared.
  await server.prepared;
});
afterAll(() => server.stop());

function holdLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy on purpose
  }
}

it("logs a held loop with the streaming request in flight, by route and the client's request id, and counts it", async () => {
  const { key, keyId } = server.createKey({ usd: 1 });
  const response = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-request-id": "client-trace-42" },
    body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "hello" }], max_tokens: 2000, stream: true, temperature: 1 }),
  });
  const reader = response.body!.getReader();
  await reader.read();
  holdLoop(400);
  let line: { heldMs: number; inFlight: Record<string, unknown>[]; msg: string } | undefined;
  // The hold made here (a shorter one may come first on a busy machine: the model's load, say).
  await vi.waitFor(
    () => {
      line = logged
        .filter((l) => l.includes("the event loop was held"))
        .map((l) => JSON.parse(l) as NonNullable<typeof line>)
        .find((stall) => stall.heldMs >= 300);
      expect(line).toBeDefined();
    },
    { timeout: 2000, interval: 20 },
  );
  await reader.cancel();
  expect(line!.msg).toBe(`the event loop was held ${line!.heldMs} ms`);
  expect(line!.inFlight).toContainEqual(expect.objectContaining({ kind: "request", method: "POST", route: "/api/v1/chat/completions", clientRequestId: "client-trace-42", keyId }));

  const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.adminKey}` } })).text();
  const count = Number(/^hearth_event_loop_stall_seconds_count (\S+)/m.exec(metrics)?.[1]);
  expect(count).toBeGreaterThanOrEqual(1);
});

it("names a model load that was in flight", async () => {
  logged.length = 0;
  // The cancelled stream above ends once the node sees its client gone.
  await vi.waitFor(() => server.models.unload("tiny-chat"), { timeout: 5000, interval: 50 });
  const loading = server.models.load("tiny-chat");
  holdLoop(400);
  expect((await loading).state).toBe("loaded");
  await vi.waitFor(() => expect(logged.some((l) => l.includes("the event loop was held"))).toBe(true), { timeout: 2000, interval: 20 });
  const line = JSON.parse(logged.find((l) => l.includes("the event loop was held"))!) as { inFlight: Record<string, unknown>[] };
  expect(line.inFlight).toContainEqual(expect.objectContaining({ kind: "model load", models: "tiny-chat" }));
});
