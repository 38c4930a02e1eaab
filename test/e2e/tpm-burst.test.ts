import { afterEach, describe, expect, it } from "vitest";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { listUsage } from "../../src/store/usage.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";
import { listRateLimitRejections } from "../../src/store/rateLimitLog.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const ask = (maxTokens: number, extra: Record<string, unknown> = {}) => ({
  model: "tiny-chat",
  messages: [{ role: "user", content: "hi" }],
  max_tokens: maxTokens,
  temperature: 0,
  ...extra,
});

function keyWithTpm(s: TestServer, tpm: number) {
  const account = createAccount(s.db, "limited");
  const { secret } = createApiKey(s.db, {
    accountId: account.id,
    description: "limited",
    keyType: "INFERENCE",
    rateLimitOverrides: JSON.stringify({ "text:S": { tpm } }),
  });
  return { key: secret, accountId: account.id };
}

interface Usage {
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

describe("TPM counts the tokens of requests still running", () => {
  it("holds a 30-way concurrent burst within one request's reservation of the limit", async () => {
    server = await startTestServer();
    const tpm = 300;
    const { key } = keyWithTpm(server, tpm);
    const responses = await Promise.all(Array.from({ length: 30 }, () => post(server!, "/chat/completions", ask(20), { key })));
    const served: Usage[] = [];
    const refusedForTokens: Response[] = [];
    let refusedAsAbuse = 0;
    for (const res of responses) {
      if (res.status === 200) {
        served.push((await res.json()) as Usage);
        continue;
      }
      expect(res.status).toBe(429);
      const { error } = (await res.json()) as { error: string };
      // More than 20 failures block the key (the abuse rule): requests that reach the server after
      // the 21st refusal was sent are refused by that block, whichever limit they would have met.
      if (/Too many failed requests/.test(error)) refusedAsAbuse++;
      else refusedForTokens.push(res);
    }
    expect(served.length).toBeGreaterThan(0);
    expect(refusedForTokens.length).toBeGreaterThan(0);
    if (refusedAsAbuse > 0) expect(refusedForTokens.length).toBeGreaterThan(20);
    const total = served.reduce((sum, body) => sum + body.usage.total_tokens, 0);
    // Every request reserves its prompt and its 20 tokens.
    const reservation = served[0]!.usage.prompt_tokens + 20;
    expect(total).toBeLessThanOrEqual(tpm + reservation);
    for (const res of refusedForTokens) {
      expect(res.headers.get("x-ratelimit-limit-tokens")).toBe(String(tpm));
      expect(res.headers.get("x-ratelimit-remaining-tokens")).toBe("0");
      expect(res.headers.get("x-ratelimit-type")).toBe("api_key");
      expect(Number(res.headers.get("x-ratelimit-reset-tokens"))).toBeGreaterThanOrEqual(0);
    }
    // Each refusal for tokens is logged once.
    expect(listRateLimitRejections(server.db).filter((row) => row.limitType === "TPM")).toHaveLength(refusedForTokens.length);
  });

  it("holds the legacy /completions to the same limit, sharing the key's window with chat", async () => {
    server = await startTestServer();
    const tpm = 300;
    const { key } = keyWithTpm(server, tpm);
    const complete = { model: "tiny-chat", prompt: "Once upon a time", max_tokens: 20, temperature: 0 };
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => post(server!, i % 2 ? "/completions" : "/chat/completions", i % 2 ? complete : ask(20), { key })));
    let total = 0;
    let largest = 0;
    let refused = 0;
    for (const res of responses) {
      if (res.status === 200) {
        const { usage } = (await res.json()) as Usage;
        total += usage.total_tokens;
        largest = Math.max(largest, usage.prompt_tokens + 20);
      } else {
        expect(res.status).toBe(429);
        refused++;
        await res.text();
      }
    }
    expect(refused).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(tpm + largest);
  });

  it("refuses a streamed request over the limit with a real 429, before any byte of the stream", async () => {
    server = await startTestServer();
    const { key } = keyWithTpm(server, 100);
    const responses = await Promise.all(Array.from({ length: 12 }, () => post(server!, "/chat/completions", ask(20, { stream: true }), { key })));
    const statuses = responses.map((res) => res.status);
    expect(statuses).toContain(200);
    expect(statuses).toContain(429);
    for (const res of responses) {
      const text = await res.text();
      if (res.status !== 429) continue;
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      expect(res.headers.get("x-ratelimit-remaining-tokens")).toBe("0");
      expect(JSON.parse(text)).toMatchObject({ error: expect.stringMatching(/100 tokens per minute/) });
    }
  });

  it("reports remaining tokens net of what is in flight", async () => {
    const now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({ now: () => now });
    const { key } = keyWithTpm(server, 10_000);
    const res = await post(server, "/chat/completions", ask(20), { key });
    const body = (await res.json()) as Usage;
    // Sent once the prompt was measured: this request's own reservation is counted.
    expect(res.headers.get("x-ratelimit-remaining-tokens")).toBe(String(10_000 - body.usage.prompt_tokens - 20));
    const next = await post(server, "/chat/completions", ask(5), { key });
    const nextBody = (await next.json()) as Usage;
    expect(next.headers.get("x-ratelimit-remaining-tokens")).toBe(String(10_000 - body.usage.total_tokens - nextBody.usage.prompt_tokens - 5));
  });

  it("releases a disconnected stream's reservation, keeping only the tokens it used", async () => {
    server = await startTestServer();
    const tpm = 1500;
    const { key, accountId } = keyWithTpm(server, tpm);
    const stream = await post(server, "/chat/completions", ask(1900, { stream: true }), { key });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    for (let i = 0; i < 4; i++) await reader.read();
    // The running request holds its prompt + 1,900 tokens: nothing is left.
    const whileRunning = await post(server, "/chat/completions", ask(2), { key });
    expect(whileRunning.status).toBe(429);
    await whileRunning.text();
    await reader.cancel();
    let rows = listUsage(server.db, accountId);
    for (let i = 0; i < 100 && !rows.some((row) => row.status === 499); i++) {
      await new Promise((r) => setTimeout(r, 20));
      rows = listUsage(server.db, accountId);
    }
    const aborted = rows.find((row) => row.status === 499)!;
    expect(aborted.completionTokens).toBeLessThan(1900);
    const after = await post(server, "/chat/completions", ask(2), { key });
    expect(after.status).toBe(200);
    const afterBody = (await after.json()) as Usage;
    const usedByAborted = aborted.promptTokens + aborted.completionTokens;
    expect(after.headers.get("x-ratelimit-remaining-tokens")).toBe(String(tpm - usedByAborted - afterBody.usage.prompt_tokens - 2));
  });
});
