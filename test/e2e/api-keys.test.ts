import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { modelPrivacyAllows } from "../../src/limits/modelPrivacy.js";
import { listLedgerEntries, toMicros } from "../../src/store/ledger.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { listApiKeys, updateApiKey } from "../../src/store/apiKeys.js";

const DAY = 86_400_000;
/** The server's clock, starting at the real time (auth checks expiry against the wall clock). */
let clock = Date.now();
const tick = (ms: number) => (clock += ms);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    models: [tinyChatEntry({ pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } })],
    config: { diemResetHourUtc: 5 },
    now: () => clock,
  });
});
afterAll(() => server.stop());
// Each test starts outside the abuse guard's 30-second failure window of the one before.
beforeEach(() => {
  tick(31_000);
});

async function call(method: string, path: string, key: string | null, body?: unknown, contentType = "application/json") {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers["content-type"] = contentType;
  const res = await fetch(`${server.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}
const chat = (key: string) => post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }, { key });
const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** What the ledger says a key spent (USD incl. bundled), as the API's six-decimal string. */
const spentBy = (keyId: string) =>
  (
    listLedgerEntries(server.db, { apiKeyId: keyId, kind: "charge" })
      .filter((c) => c.currency !== "DIEM")
      .reduce((sum, c) => sum - c.deltaMicros, 0) / 1e6
  ).toFixed(6);

describe("API key management with an admin key", () => {
  it("creates a key (secret shown once), lists, reads, updates and revokes it; a revoked key gets 401", async () => {
    const admin = server.createKey({ admin: true, usd: 10 });
    const expiry = isoDate(clock + 30 * DAY);
    const createdAt = clock;
    const created = await call("POST", "/api_keys", admin.key, {
      apiKeyType: "INFERENCE",
      description: "ci runner",
      consumptionLimit: { usd: 1.5, diem: 2 },
      limitPeriod: "MONTH",
      modelPrivacy: "PRIVATE_ONLY",
      expiresAt: expiry,
    });
    expect(created.status).toBe(200);
    const secret = created.body.data.apiKey as string;
    expect(secret).toMatch(/^hth_[A-Za-z0-9_-]{43}$/);
    const id = created.body.data.id as string;
    expect(created.body).toEqual({
      success: true,
      data: {
        apiKey: secret,
        id,
        apiKeyType: "INFERENCE",
        description: "ci runner",
        consumptionLimit: { usd: 1.5, diem: 2, vcu: null },
        limitPeriod: "MONTH",
        modelPrivacy: "PRIVATE_ONLY",
        expiresAt: `${expiry}T00:00:00.000Z`,
      },
    });
    // Stored as micros; the secret only as a hash.
    const row = server.db.prepare("SELECT * FROM api_keys WHERE id = ?").get(id) as Record<string, unknown>;
    expect(row).toMatchObject({ account_id: admin.accountId, limit_usd_micros: 1_500_000, limit_diem_micros: 2_000_000, limit_period: "MONTH", model_privacy: "PRIVATE_ONLY" });
    expect(JSON.stringify(row)).not.toContain(secret);

    expect((await chat(secret)).status).toBe(200);
    const spent = spentBy(id);
    expect(Number(spent)).toBeGreaterThan(0);

    const listed = await call("GET", "/api_keys", admin.key);
    expect(listed.status).toBe(200);
    expect(listed.body.object).toBe("list");
    expect(listed.body.data.map((k: any) => k.id).sort()).toEqual([admin.keyId, id].sort());
    const item = listed.body.data.find((k: any) => k.id === id);
    expect(item).toEqual({
      id,
      apiKeyType: "INFERENCE",
      description: "ci runner",
      consumptionLimits: { usd: 1.5, diem: 2, vcu: null },
      limitPeriod: "MONTH",
      modelPrivacy: "PRIVATE_ONLY",
      createdAt: new Date(createdAt).toISOString(),
      expiresAt: `${expiry}T00:00:00.000Z`,
      lastUsedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      last6Chars: secret.slice(-6),
      usage: { trailingSevenDays: { usd: spent, vcu: "0.000000", diem: "0.000000" } },
      currentPeriodUsage: { usd: spent, diem: "0.000000" },
    });
    // This node's fields (operator flag, rate-limit tier and overrides, gateway flag) only when asked for: the reference's key objects have none.
    const extended = await call("GET", "/api_keys?include=service_fields", admin.key);
    expect(extended.body.data.find((k: any) => k.id === id)).toEqual({ ...item, isOperator: false, rateLimitTier: "standard", rateLimits: null, isGateway: false });
    // The admin key has no consumption limit, so no currentPeriodUsage.
    expect(listed.body.data.find((k: any) => k.id === admin.keyId).currentPeriodUsage).toBeUndefined();

    const one = await call("GET", `/api_keys/${id}`, admin.key);
    expect(one).toEqual({ status: 200, body: { data: item } });

    const patched = await call("PATCH", "/api_keys", admin.key, {
      id,
      description: "renamed",
      consumptionLimit: { usd: null },
      limitPeriod: "LIFETIME",
      expiresAt: "",
      modelPrivacy: "ALL",
    });
    expect(patched.status).toBe(200);
    expect(patched.body.success).toBe(true);
    expect(patched.body.data).toMatchObject({
      id,
      description: "renamed",
      consumptionLimits: { usd: null, diem: 2, vcu: null },
      limitPeriod: "LIFETIME",
      expiresAt: null,
      modelPrivacy: "ALL",
      last6Chars: secret.slice(-6),
    });
    expect((await call("GET", `/api_keys/${id}`, admin.key)).body.data).toMatchObject({ description: "renamed", consumptionLimits: { usd: null, diem: 2 }, expiresAt: null });

    expect(await call("DELETE", `/api_keys?id=${id}`, admin.key)).toEqual({ status: 200, body: { success: true } });
    expect((await chat(secret)).status).toBe(401);
    expect((await call("GET", `/api_keys/${id}`, admin.key)).status).toBe(404);
    expect((await call("GET", "/api_keys", admin.key)).body.data.map((k: any) => k.id)).toEqual([admin.keyId]);
    expect((await call("DELETE", `/api_keys?id=${id}`, admin.key)).status).toBe(404);

    // Without an id (the provider makes it optional) the key making the request deletes itself.
    const second = await call("POST", "/api_keys", admin.key, { apiKeyType: "ADMIN", description: "short-lived" });
    const secondKey = second.body.data.apiKey as string;
    expect(await call("DELETE", "/api_keys", secondKey)).toEqual({ status: 200, body: { success: true } });
    expect((await call("GET", "/api_keys", secondKey)).status).toBe(401);
    expect((await call("GET", "/api_keys", admin.key)).status).toBe(200);
  });

  it("an admin key manages only its own account's keys", async () => {
    const mine = server.createKey({ admin: true });
    const theirs = server.createKey({ admin: true });
    const target = (await call("POST", "/api_keys", theirs.key, { apiKeyType: "INFERENCE", description: "theirs" })).body.data.id as string;
    expect((await call("GET", "/api_keys", mine.key)).body.data.map((k: any) => k.id)).toEqual([mine.keyId]);
    expect((await call("GET", `/api_keys/${target}`, mine.key)).status).toBe(404);
    expect((await call("PATCH", "/api_keys", mine.key, { id: target, description: "hijacked" })).status).toBe(404);
    expect((await call("DELETE", `/api_keys?id=${target}`, mine.key)).status).toBe(404);
    expect((await call("GET", `/api_keys/${target}`, theirs.key)).body.data.description).toBe("theirs");
  });

  it("an inference key gets 403 saying an admin key is needed; no key is 401", async () => {
    const inference = server.createKey();
    const requests: [string, string, unknown?][] = [
      ["GET", "/api_keys"],
      ["GET", `/api_keys/${inference.keyId}`],
      ["POST", "/api_keys", { apiKeyType: "ADMIN", description: "escalate" }],
      ["PATCH", "/api_keys", { id: inference.keyId, rateLimitTier: "partner" }],
      ["DELETE", `/api_keys?id=${inference.keyId}`],
    ];
    for (const [method, path, body] of requests) {
      const res = await call(method, path, inference.key, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toEqual({ error: expect.stringMatching(/admin API key.*inference key/) });
      expect((await call(method, path, null, body)).status, `${method} ${path} without a key`).toBe(401);
    }
    // Nothing changed, and the key still works for what it may do.
    expect(listApiKeys(server.db, inference.accountId)).toHaveLength(1);
    expect((await call("GET", "/api_keys/rate_limits", inference.key)).status).toBe(200);
  });

  it("rejects invalid key settings with a 400 naming the field", async () => {
    const admin = server.createKey({ admin: true });
    const { keyId } = admin;
    const cases: [string, string, unknown, string[]][] = [
      ["POST", "/api_keys", { apiKeyType: "INFERENCE", description: "x".repeat(65) }, ["description"]],
      ["POST", "/api_keys", { description: "no type" }, ["apiKeyType"]],
      ["POST", "/api_keys", { apiKeyType: "ROOT", description: "bad type" }, ["apiKeyType"]],
      ["POST", "/api_keys", { apiKeyType: "INFERENCE", description: "d", expiresAt: "tomorrow" }, ["expiresAt"]],
      ["POST", "/api_keys", { apiKeyType: "INFERENCE", description: "d", expiresAt: "2020-01-01" }, ["expiresAt"]],
      ["POST", "/api_keys", { apiKeyType: "INFERENCE", description: "d", consumptionLimit: { usd: -1 } }, ["consumptionLimit", "usd"]],
      ["POST", "/api_keys", { apiKeyType: "INFERENCE", description: "d", limitPeriod: "WEEK" }, ["limitPeriod"]],
      ["POST", "/api_keys", { apiKeyType: "INFERENCE", description: "d", modelPrivacy: "SOME" }, ["modelPrivacy"]],
      ["PATCH", "/api_keys", { id: keyId, rateLimits: { "text:XXL": { rpm: 1 } } }, ["rateLimits"]],
      ["PATCH", "/api_keys", { id: keyId, rateLimits: { "*": { rpm: 0 } } }, ["rateLimits", "*", "rpm"]],
      ["PATCH", "/api_keys", { id: keyId, rateLimitTier: "gold" }, ["rateLimitTier"]],
      ["PATCH", "/api_keys", { description: "no id" }, ["id"]],
      ["DELETE", "/api_keys?id=", undefined, ["id"]],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await call(method, path, admin.key, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      let node = res.body.details;
      for (const part of field) node = node?.[part];
      expect(node?._errors?.length, `${JSON.stringify(body)} names ${field.join(".")}`).toBeGreaterThan(0);
    }
    tick(31_000);
    // Unknown fields are refused, not silently ignored (the response spelling is accepted as an alias).
    const unknown = await call("POST", "/api_keys", admin.key, { apiKeyType: "INFERENCE", description: "d", colour: "red" });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain("colour");
    const alias = await call("POST", "/api_keys", admin.key, { apiKeyType: "INFERENCE", description: "alias", consumptionLimits: { diem: 3 } });
    expect(alias.body.data.consumptionLimit).toEqual({ usd: null, diem: 3, vcu: null });
    expect((await call("POST", "/api_keys", admin.key, "apiKeyType=ADMIN", "application/x-www-form-urlencoded")).status).toBe(415);
    expect((await call("PATCH", "/api_keys", admin.key, { id: "no-such-key", description: "x" })).status).toBe(404);
  });
});

describe("rate limits of a key", () => {
  it("round-trips the operator's tier and overrides through PATCH, and they apply to the key's requests", async () => {
    // Raising limits is the operator's (test/e2e/operator.test.ts): an operator key in an account of its own.
    const admin = server.createKey({ operator: true, usd: 5 });
    const { data } = (await call("POST", "/api_keys", admin.key, { apiKeyType: "INFERENCE", description: "limited" })).body;
    const overrides = { "text:S": { rpm: 2 }, "*": { tpm: 5000 } };
    const patched = await call("PATCH", "/api_keys?include=service_fields", admin.key, { id: data.id, rateLimitTier: "partner", rateLimits: overrides });
    expect(patched.body.data).toMatchObject({ rateLimitTier: "partner", rateLimits: overrides });
    expect((await call("GET", `/api_keys/${data.id}?include=service_fields`, admin.key)).body.data).toMatchObject({ rateLimitTier: "partner", rateLimits: overrides });
    // Without the opt-in, the reference's key object alone.
    expect((await call("GET", `/api_keys/${data.id}`, admin.key)).body.data).not.toHaveProperty("rateLimitTier");
    expect((await call("PATCH", "/api_keys", admin.key, { id: data.id, description: "limited" })).body.data).not.toHaveProperty("rateLimits");
    const limitsOf = async () => (await call("GET", "/api_keys/rate_limits", data.apiKey)).body.data.rateLimits;
    expect(await limitsOf()).toEqual([
      {
        apiModelId: "tiny-chat",
        rateLimits: [
          { amount: 2, type: "RPM" },
          { amount: 5000, type: "TPM" },
        ],
      },
    ]);

    expect((await chat(data.apiKey)).status).toBe(200);
    expect((await chat(data.apiKey)).status).toBe(200);
    const refused = await chat(data.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-limit-requests")).toBe("2");

    const log = await call("GET", "/api_keys/rate_limits/log", data.apiKey);
    expect(log).toEqual({
      status: 200,
      body: {
        object: "list",
        data: [{ apiKeyId: data.id, modelId: "tiny-chat", rateLimitTier: "partner:text:S", rateLimitType: "RPM", timestamp: new Date(clock).toISOString() }],
      },
    });
    // The alias path, and the account's other keys see the account's log too.
    expect(await call("GET", "/api_keys/rate_limit_logs", admin.key)).toEqual(log);
    expect((await call("GET", "/api_keys/rate_limits/log", server.createKey().key)).body).toEqual({ object: "list", data: [] });

    await call("PATCH", "/api_keys", admin.key, { id: data.id, rateLimits: null });
    expect(await limitsOf()).toEqual([
      {
        apiModelId: "tiny-chat",
        rateLimits: [
          { amount: 150, type: "RPM" },
          { amount: 1_500_000, type: "TPM" },
        ],
      },
    ]);
    await call("PATCH", "/api_keys", admin.key, { id: data.id, rateLimitTier: "standard" });
    expect(await limitsOf()).toEqual([
      {
        apiModelId: "tiny-chat",
        rateLimits: [
          { amount: 75, type: "RPM" },
          { amount: 750_000, type: "TPM" },
        ],
      },
    ]);
  });

  it("GET /api_keys/rate_limits reports the calling key's access, tier, balances, expiry and the next epoch", async () => {
    const caller = server.createKey({ usd: 3 });
    server.credits.stake(caller.accountId, toMicros(2));
    const res = await call("GET", "/api_keys/rate_limits", caller.key);
    expect(res.status).toBe(200);
    const reset = new Date(clock);
    let next = Date.UTC(reset.getUTCFullYear(), reset.getUTCMonth(), reset.getUTCDate(), 5);
    if (next <= clock) next += DAY;
    expect(res.body).toEqual({
      data: {
        accessPermitted: true,
        apiTier: { id: "standard", isCharged: true },
        balances: { USD: 3, DIEM: 2 },
        keyExpiration: null,
        nextEpochBegins: new Date(next).toISOString(),
        rateLimits: [
          {
            apiModelId: "tiny-chat",
            rateLimits: [
              { amount: 75, type: "RPM" },
              { amount: 750_000, type: "TPM" },
            ],
          },
        ],
      },
    });
    const broke = server.createKey();
    const expiry = isoDate(clock + 10 * DAY);
    updateApiKey(server.db, broke.keyId, { expiresAt: Date.parse(expiry) });
    const brokeLimits = (await call("GET", "/api_keys/rate_limits", broke.key)).body.data;
    expect(brokeLimits).toMatchObject({ accessPermitted: false, balances: { USD: 0, DIEM: 0 }, keyExpiration: `${expiry}T00:00:00.000Z` });
  });
});

describe("modelPrivacy", () => {
  it("is stored per key; the rule it stands for allows models by privacy tier", () => {
    const text = (privacy: "private" | "anonymized") => ({ type: "text" as const, privacy });
    const image = (privacy: "private" | "anonymized") => ({ type: "image" as const, privacy });
    expect(modelPrivacyAllows("ALL", text("anonymized"))).toBe(true);
    expect(modelPrivacyAllows("PRIVATE_TEXT", text("anonymized"))).toBe(false);
    expect(modelPrivacyAllows("PRIVATE_TEXT", image("anonymized"))).toBe(true);
    expect(modelPrivacyAllows("PRIVATE_TEXT", text("private"))).toBe(true);
    expect(modelPrivacyAllows("PRIVATE_ONLY", image("anonymized"))).toBe(false);
    expect(modelPrivacyAllows("PRIVATE_ONLY", image("private"))).toBe(true);
  });
});
