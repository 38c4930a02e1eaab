import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

interface DecodeStats {
  batches: number;
  tokens: number;
  sequencesPerBatch: Record<string, number>;
  fullSteps: number;
  deadlineSteps: number;
}

async function decodeStats(): Promise<DecodeStats> {
  const res = await fetch(`${server.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${server.adminKey}` } });
  const body = (await res.json()) as { data: { id: string; decode: DecodeStats | null }[] };
  return body.data.find((m) => m.id === "tiny-chat")!.decode!;
}

const difference = (after: DecodeStats, before: DecodeStats) => {
  const perBatch: Record<string, number> = {};
  for (const [sequences, count] of Object.entries(after.sequencesPerBatch)) {
    const delta = count - (before.sequencesPerBatch[sequences] ?? 0);
    if (delta > 0) perBatch[sequences] = delta;
  }
  return { batches: after.batches - before.batches, perBatch, deadlineSteps: after.deadlineSteps - before.deadlineSteps };
};

async function complete(maxTokens: number, prompt: string) {
  const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: prompt }], max_tokens: maxTokens, temperature: 0 });
  expect(res.status).toBe(200);
  return ((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens;
}

describe("decode batches: every generating sequence takes part in every step", () => {
  it("four concurrent generations need one decode call per generated token, not one and a third", async () => {
    await complete(1, "warm up");
    const before = await decodeStats();
    const tokens = await Promise.all(["one", "two", "three", "four"].map((prompt) => complete(64, prompt)));
    const delta = difference(await decodeStats(), before);

    const longest = Math.max(...tokens);
    const shortest = Math.min(...tokens);
    expect(shortest).toBeGreaterThan(32);
    // Each request's prompt is evaluated once (four decode calls at most, fewer when they arrive
    // together); every step after that carries one token of every sequence still generating.
    // node-llama-cpp's own scheduling takes about 1.33 calls per token here (one sequence misses each batch).
    expect(delta.batches).toBeLessThanOrEqual(longest + 4);
    expect(delta.perBatch["4"] ?? 0).toBeGreaterThanOrEqual(shortest - 4);
  });

  it("the steps of a lone stream are one decode call each", async () => {
    const before = await decodeStats();
    const tokens = await complete(40, "alone");
    const delta = difference(await decodeStats(), before);
    expect(delta.batches).toBe(tokens);
    expect(delta.perBatch).toEqual({ "1": tokens });
  });
});
