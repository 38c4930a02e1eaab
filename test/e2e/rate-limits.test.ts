import { afterEach, describe, expect, it } from "vitest";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { listRateLimitRejections } from "../../src/store/rateLimitLog.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const ask = { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2, temperature: 0 };

function keyWith(s: TestServer, overrides: Record<string, unknown> | null, tier: "standard" | "partner" = "standard") {
  const account = createAccount(s.db, "limited");
  return createApiKey(s.db, {
    accountId: account.id,
    description: "limited",
    keyType: "INFERENCE",
    rateLimitTier: tier,
    rateLimitOverrides: overrides ? JSON.stringify(overrides) : null,
  }).secret;
}

describe("rate limits per key and model tier", () => {
  it("sends the tier's limits on every authenticated request", async () => {
    // A fixed clock: on the wall clock the minute can roll over between admission and the
    // headers, and the new window rightly shows all 50 requests left.
    server = await startTestServer({ models: [tinyChatEntry({ tier: "M" })], now: () => Date.parse("2026-05-01T10:00:10Z") });
    const res = await post(server, "/chat/completions", ask, { key: keyWith(server, null) });
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("50");
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("49");
    expect(res.headers.get("x-ratelimit-limit-tokens")).toBe("750000");
    const partner = await post(server, "/chat/completions", ask, { key: keyWith(server, null, "partner") });
    expect(partner.headers.get("x-ratelimit-limit-requests")).toBe("100");
    expect(partner.headers.get("x-ratelimit-limit-tokens")).toBe("1500000");
  });

  it("answers the N+1th request in a window with 429 and correct headers, and admits again in the next window", async () => {
    let now = Date.parse("2026-05-01T10:00:10Z");
    server = await startTestServer({ now: () => now });
    const key = keyWith(server, { "*": { rpm: 3 } });
    for (let i = 0; i < 3; i++) expect((await post(server, "/chat/completions", ask, { key })).status).toBe(200);
    const refused = await post(server, "/chat/completions", ask, { key });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: string }).error).toMatch(/3 requests per minute/);
    expect(refused.headers.get("x-ratelimit-type")).toBe("api_key");
    expect(refused.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(refused.headers.get("x-ratelimit-reset-requests")).toBe(String(Date.parse("2026-05-01T10:01:00Z") / 1000));
    expect(refused.headers.get("x-ratelimit-reset-tokens")).toBe("50");
    const logged = listRateLimitRejections(server.db).map((row) => row.limitType);
    expect(logged).toEqual(["RPM"]);
    now = Date.parse("2026-05-01T10:01:00Z");
    expect((await post(server, "/chat/completions", ask, { key })).status).toBe(200);
  });

  it("counts tokens per minute and refuses once they are spent", async () => {
    const now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({ now: () => now });
    const key = keyWith(server, { "text:S": { tpm: 30 } });
    const first = await post(server, "/chat/completions", ask, { key });
    const used = ((await first.json()) as { usage: { total_tokens: number } }).usage.total_tokens;
    expect(used).toBeGreaterThan(30);
    const second = await post(server, "/chat/completions", ask, { key });
    expect(second.status).toBe(429);
    expect(second.headers.get("x-ratelimit-remaining-tokens")).toBe("0");
    expect(((await second.json()) as { error: string }).error).toMatch(/30 tokens per minute/);
  });

  it("blocks a key for 30 s after more than 20 failed requests in 30 s", async () => {
    let now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({ now: () => now });
    const key = keyWith(server, null);
    for (let i = 0; i < 21; i++) {
      now += 1000;
      expect((await post(server, "/chat/completions", "{not json", { key })).status).toBe(400);
    }
    const blocked = await post(server, "/chat/completions", ask, { key });
    expect(blocked.status).toBe(429);
    expect(((await blocked.json()) as { error: string }).error).toMatch(/wait 30 seconds/);
    // Another key is not affected.
    expect((await post(server, "/chat/completions", ask, { key: keyWith(server, null) })).status).toBe(200);
    now += 29_000;
    expect((await post(server, "/chat/completions", ask, { key })).status).toBe(429);
    now += 1_000;
    expect((await post(server, "/chat/completions", ask, { key })).status).toBe(200);
    expect(listRateLimitRejections(server.db).map((row) => row.limitType)).toEqual(["FAILED_REQUESTS"]);
  });

  it("does not block after 20 failures, or when failures are spread beyond 30 s", async () => {
    let now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({ now: () => now });
    const key = keyWith(server, null);
    for (let i = 0; i < 20; i++) await post(server, "/chat/completions", "{", { key });
    expect((await post(server, "/chat/completions", ask, { key })).status).toBe(200);
    now += 31_000;
    for (let i = 0; i < 20; i++) await post(server, "/chat/completions", "{", { key });
    expect((await post(server, "/chat/completions", ask, { key })).status).toBe(200);
  });

  it("blocks an unauthenticated caller by IP", async () => {
    const now = Date.parse("2026-05-01T10:00:00Z");
    server = await startTestServer({ now: () => now });
    // No credentials: each answer is the x402 discovery 402, a failure like any other.
    for (let i = 0; i < 21; i++) expect((await post(server, "/chat/completions", ask, { key: null })).status).toBe(402);
    expect((await post(server, "/chat/completions", ask, { key: null })).status).toBe(429);
  });
});
