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
    // When the block ends (Unix seconds), and whose it is.
    expect(blocked.headers.get("x-ratelimit-reset-requests")).toBe(String(Math.ceil((now + 30_000) / 1000)));
    expect(blocked.headers.get("x-ratelimit-type")).toBe("api_key");
    expect(blocked.headers.get("retry-after")).toBe("30");
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

describe("x-ratelimit-* on the account endpoints", () => {
  const get = (s: TestServer, path: string, key: string) => fetch(`${s.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });

  it("keys, billing, characters, voices and stored responses share one window per key, with its headers", async () => {
    const now = Date.parse("2026-05-01T10:00:10Z");
    server = await startTestServer({ now: () => now });
    const key = keyWith(server, null);
    const calls: (() => Promise<Response>)[] = [
      () => get(server!, "/billing/balance", key),
      () => get(server!, "/billing/usage-history", key),
      () => get(server!, "/api_keys/rate_limits", key),
      () => get(server!, "/characters", key),
      () => get(server!, "/audio/voices", key),
      () => get(server!, "/responses/resp_missing", key),
    ];
    let remaining = 300;
    for (const call of calls) {
      const res = await call();
      remaining--;
      expect(res.headers.get("x-ratelimit-limit-requests"), res.url).toBe("300");
      expect(res.headers.get("x-ratelimit-remaining-requests"), res.url).toBe(String(remaining));
      expect(res.headers.get("x-ratelimit-reset-requests"), res.url).toBe(String(Date.parse("2026-05-01T10:01:00Z") / 1000));
    }
    // A model's own tier is apart: chat shows the text tier's window, untouched by the calls above.
    const chat = await post(server, "/chat/completions", ask, { key });
    expect(chat.headers.get("x-ratelimit-limit-requests")).toBe("75");
    expect(chat.headers.get("x-ratelimit-remaining-requests")).toBe("74");
    const partner = await get(server, "/billing/balance", keyWith(server, null, "partner"));
    expect(partner.headers.get("x-ratelimit-limit-requests")).toBe("600");
  });

  it("refuses the 301st account call in a minute with a 429 and its headers, and a per-key override does not shrink the window", async () => {
    let now = Date.parse("2026-05-01T10:00:10Z");
    server = await startTestServer({ now: () => now });
    const key = keyWith(server, { "*": { rpm: 1 } });
    for (let i = 0; i < 300; i++) {
      const res = await get(server, "/billing/balance", key);
      if (res.status !== 200) expect.fail(`call ${i + 1} answered ${res.status}`);
    }
    const refused = await get(server, "/characters", key);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: string }).error).toMatch(/300 requests per minute to the account endpoints/);
    expect(refused.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(refused.headers.get("x-ratelimit-type")).toBe("api_key");
    expect(listRateLimitRejections(server.db).map((row) => row.tier)).toEqual(["standard:account"]);
    now = Date.parse("2026-05-01T10:01:00Z");
    expect((await get(server, "/characters", key)).status).toBe(200);
  });
});
