import { afterEach, describe, expect, it } from "vitest";
import { listUsage } from "../../src/store/usage.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** Streams one request, timing its first content chunk and its end. */
async function timedStream(s: TestServer, maxTokens: number, signal?: AbortSignal) {
  const res = await post(s, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "go" }], max_tokens: maxTokens, temperature: 0, stream: true }, {});
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let firstTokenAt: number | undefined;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (firstTokenAt === undefined && /"content":"[^"]/.test(text)) firstTokenAt = performance.now();
    if (signal?.aborted) {
      await reader.cancel();
      break;
    }
  }
  return { firstTokenAt: firstTokenAt!, endedAt: performance.now(), text };
}

describe("continuous batching and the wait queue", () => {
  it("runs 4 concurrent streams as parallel sequences: every one starts before any finishes", async () => {
    server = await startTestServer();
    const runs = await Promise.all([0, 1, 2, 3].map(() => timedStream(server!, 400)));
    const firstFinish = Math.min(...runs.map((r) => r.endedAt));
    for (const run of runs) {
      expect(run.firstTokenAt).toBeLessThan(firstFinish);
      expect(run.text).toContain("data: [DONE]");
    }
  });

  it("queues beyond the sequences and answers 503 when the queue is full", async () => {
    server = await startTestServer({ models: [tinyChatEntry({ llama: { contextSize: 2048, sequences: 1, threads: 1, gpuLayers: 0 }, queue: { maxWaiting: 1 } })] });
    const body = { model: "tiny-chat", messages: [{ role: "user", content: "go" }], max_tokens: 300, temperature: 0 };
    // Warm the model so the three requests below meet a loaded engine at the same moment.
    expect((await post(server, "/chat/completions", { ...body, max_tokens: 1 })).status).toBe(200);
    const statuses = await Promise.all([0, 1, 2].map(() => post(server!, "/chat/completions", body).then((r) => r.status)));
    expect(statuses.sort()).toEqual([200, 200, 503]);
  });

  it("answers 504 when a non-streaming request passes the timeout, and frees its sequence", async () => {
    server = await startTestServer({ config: { requestTimeoutMs: 150 } });
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "go" }], max_tokens: 2000, temperature: 0 });
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: string }).error).toMatch(/timed-out/);
    expect(server.models.statusOf("tiny-chat")).toMatchObject({ state: "loaded", queue: { busy: 0 } });
  });

  it("stops generating at once when the client disconnects mid-stream, and frees the sequence", async () => {
    server = await startTestServer();
    const { key, accountId } = server.createKey();
    const controller = new AbortController();
    const res = await post(
      server,
      "/chat/completions",
      { model: "tiny-chat", messages: [{ role: "user", content: "go" }], max_tokens: 3000, temperature: 0, stream: true },
      { key },
    );
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    controller.abort();
    await reader.cancel();
    // The usage row is written when the generation has stopped.
    let rows = listUsage(server.db, accountId);
    for (let i = 0; i < 100 && rows.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      rows = listUsage(server.db, accountId);
    }
    expect(rows).toHaveLength(1);
    expect(rows[0]!.status).toBe(499);
    expect(rows[0]!.finishReason).toBe("abort");
    expect(rows[0]!.completionTokens).toBeLessThan(1500);
    expect(server.models.statusOf("tiny-chat")).toMatchObject({ state: "loaded", queue: { busy: 0 } });
  });
});
