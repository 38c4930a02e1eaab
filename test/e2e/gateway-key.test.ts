import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bodyBudgetOf } from "../../src/http/bodyBudget.js";
import { loadModelsConfig } from "../../src/models/loadModelsConfig.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { grantCredits, toMicros } from "../../src/store/ledger.js";
import { post, startTestServer, tinyChatEntry, tinyKokoroEntry, type TestServer } from "../helpers/testServer.js";

/**
 * A gateway (docs/scaling.md) relays many callers to a pool node through one key and applies
 * their limits itself. Held to one caller's limits, the node refused the whole gateway after a
 * minute's share of one key (20 requests on a tier-L model) and then blocked it for 30 s as an
 * abuser; a gateway key is outside both.
 */
let server: TestServer | undefined;
let gatewayServer: TestServer | undefined;
afterEach(async () => {
  await gatewayServer?.stop();
  await server?.stop();
  server = undefined;
  gatewayServer = undefined;
});

const ask = { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 1, temperature: 0 };

async function createKey(s: TestServer, body: Record<string, unknown>, key = s.adminKey) {
  const res = await post(s, "/api_keys?include=service_fields", { apiKeyType: "INFERENCE", description: "gateway", ...body }, { key });
  return { status: res.status, body: (await res.json()) as { data?: { apiKey: string; isGateway?: boolean }; error?: string } };
}

describe("gateway keys", () => {
  it("only the operator makes one, and only of an inference key; the key objects say so with service_fields", async () => {
    server = await startTestServer({ models: [tinyChatEntry()] });
    const made = await createKey(server, { isGateway: true });
    expect(made.status).toBe(200);
    expect(made.body.data!.isGateway).toBe(true);
    expect((await createKey(server, { isGateway: true, apiKeyType: "ADMIN" })).status).toBe(400);
    const accountAdmin = server.createKey({ admin: true }).key;
    const refused = await createKey(server, { isGateway: true }, accountAdmin);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/isGateway/);
    // A plain key's objects say false; without service_fields the field is not sent at all.
    expect((await createKey(server, {}, accountAdmin)).body.data!.isGateway).toBe(false);
    const listed = (await (await fetch(`${server.baseUrl}/api_keys`, { headers: { authorization: `Bearer ${server.adminKey}` } })).json()) as { data: object[] };
    expect(listed.data.every((key) => !("isGateway" in key))).toBe(true);
  });

  it("is held to no per-key request limit where a standard key gets a 429 after its tier's share", async () => {
    // Tier L: 20 requests a minute per key. A fixed clock keeps all of them in one window.
    server = await startTestServer({ models: [tinyChatEntry({ tier: "L" })], now: () => Date.parse("2026-05-01T10:00:10Z") });
    const gateway = (await createKey(server, { isGateway: true })).body.data!.apiKey;
    const standard = server.createKey({ usd: 10 }).key;
    const statuses = { gateway: [] as number[], standard: [] as number[] };
    for (let i = 0; i < 24; i++) {
      statuses.gateway.push((await post(server, "/chat/completions", ask, { key: gateway })).status);
      statuses.standard.push((await post(server, "/chat/completions", ask, { key: standard })).status);
    }
    expect(statuses.standard.slice(0, 20).every((s) => s === 200)).toBe(true);
    expect(statuses.standard.slice(20)).toEqual([429, 429, 429, 429]);
    expect(statuses.gateway.every((s) => s === 200)).toBe(true);
    // It sends no x-ratelimit-* headers: there is no window to describe.
    const answered = await post(server, "/chat/completions", ask, { key: gateway });
    expect(answered.headers.get("x-ratelimit-limit-requests")).toBeNull();
  });

  it("is never blocked for repeated failures (its callers' mistakes are not one abuser's), where a standard key is", async () => {
    server = await startTestServer({ models: [tinyChatEntry()] });
    const gateway = (await createKey(server, { isGateway: true })).body.data!.apiKey;
    const standard = server.createKey({ usd: 10 }).key;
    for (const key of [gateway, standard]) for (let i = 0; i < 25; i++) await post(server, "/chat/completions", "{broken", { key });
    expect((await post(server, "/chat/completions", ask, { key: gateway })).status).toBe(200);
    const blocked = await post(server, "/chat/completions", ask, { key: standard });
    expect(blocked.status).toBe(429);
    expect(((await blocked.json()) as { error: string }).error).toMatch(/Too many failed requests/);
    // Revoked, it is an ordinary key again: its failures count.
    const id = (
      (await (await fetch(`${server.baseUrl}/api_keys?include=service_fields`, { headers: { authorization: `Bearer ${server.adminKey}` } })).json()) as {
        data: { id: string; isGateway: boolean }[];
      }
    ).data.find((key) => key.isGateway)!.id;
    expect((await fetch(`${server.baseUrl}/api_keys?id=${id}`, { method: "DELETE", headers: { authorization: `Bearer ${server.adminKey}` } })).status).toBe(200);
    for (let i = 0; i < 21; i++) expect((await post(server, "/chat/completions", ask, { key: gateway })).status).toBe(401);
    expect((await post(server, "/chat/completions", ask, { key: gateway })).status).toBe(429);
  });

  it("has no one caller's share of the body budget: it may hold more than a quarter of it at once", async () => {
    server = await startTestServer({ models: [tinyChatEntry()], config: { maxBodyInFlight: 4_000_000 } });
    const gateway = (await createKey(server, { isGateway: true })).body.data!.apiKey;
    const budget = bodyBudgetOf(server.app);
    // Two bodies of 40% of the budget each, held open (sent all but their last byte) at the same time.
    const bodyBytes = Math.floor(budget.totalBytes * 0.4);
    // Sends all but the body's last byte and reports what the node did: admitted it (the budget
    // holds its bytes, and the node waits for the rest) or refused it (an answer came).
    const holdOpen = async (key: string) => {
      const { request } = await import("node:http");
      const url = new URL(`${server!.baseUrl}/chat/completions`);
      const heldBefore = budget.held();
      return new Promise<{ status: number | undefined; finish: () => void }>((resolve) => {
        const req = request({
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": bodyBytes },
        });
        const finish = () => req.destroy();
        const admitted = setInterval(() => {
          if (budget.held() < heldBefore + bodyBytes) return;
          clearInterval(admitted);
          resolve({ status: undefined, finish });
        }, 5);
        req.on("response", (res) => {
          clearInterval(admitted);
          res.resume();
          resolve({ status: res.statusCode, finish });
        });
        req.on("error", () => undefined);
        req.write(" ".repeat(bodyBytes - 1));
      });
    };
    const released = async () => {
      for (let i = 0; i < 400 && budget.held() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const standard = server.createKey({ usd: 10 }).key;
    const standardFirst = await holdOpen(standard);
    const standardSecond = await holdOpen(standard);
    expect(standardFirst.status).toBeUndefined();
    expect(standardSecond.status).toBe(429);
    standardFirst.finish();
    standardSecond.finish();
    await released();
    const gatewayFirst = await holdOpen(gateway);
    const gatewaySecond = await holdOpen(gateway);
    expect([gatewayFirst.status, gatewaySecond.status]).toEqual([undefined, undefined]);
    gatewayFirst.finish();
    gatewaySecond.finish();
  });

  it("through a real gateway: a node limiting an ordinary key refuses the gateway (chat, speech) with a 503 that says why; a gateway key is served", async () => {
    server = await startTestServer({ models: [tinyChatEntry(), tinyKokoroEntry()] });
    const nodeKey = (gateway: boolean) => {
      const account = createAccount(server!.db, gateway ? "gateway" : "ordinary");
      grantCredits(server!.db, account.id, "USD", toMicros(10), "pool");
      // The ordinary key's limit is low so that a test reaches it: what a tier-L model does at 20 a minute.
      return createApiKey(server!.db, { accountId: account.id, description: "pool", keyType: "INFERENCE", gateway, rateLimitOverrides: JSON.stringify({ "*": { rpm: 2 } }) })
        .secret;
    };
    const relayed = (id: string, apiKey: string) => ({
      id,
      type: "text",
      backend: "upstream",
      pricing: { input: { usd: 0.1, diem: 0.1 }, output: { usd: 0.1, diem: 0.1 } },
      upstream: { baseUrl: server!.baseUrl, apiKey, model: "tiny-chat", contextSize: 1024 },
    });
    const dir = mkdtempSync(join(tmpdir(), "hearth-gateway-key-"));
    try {
      const ordinary = nodeKey(false);
      const speech = {
        id: "tts-qwen3-0-6b",
        type: "tts",
        backend: "upstream",
        speech: { voices: ["af_heart"] },
        pricing: { per_thousand_characters: { usd: 0.02, diem: 0.02 } },
        upstream: { baseUrl: server.baseUrl, apiKey: ordinary, model: "tts-kokoro" },
      };
      writeFileSync(join(dir, "models.config.json"), JSON.stringify({ models: [relayed("through-ordinary", ordinary), relayed("through-gateway", nodeKey(true)), speech] }));
      gatewayServer = await startTestServer({ models: loadModelsConfig(join(dir, "models.config.json"), dir, {}).models });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const caller = gatewayServer.createKey({ usd: 10 }).key;
    const through = (model: string) => post(gatewayServer!, "/chat/completions", { ...ask, model }, { key: caller });
    expect((await through("through-ordinary")).status).toBe(200);
    expect((await through("through-ordinary")).status).toBe(200);
    const refused = await through("through-ordinary");
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: string }).error).toMatch(/is limiting this node's requests \(429: Rate limit exceeded.*gateway key/);
    for (let i = 0; i < 5; i++) expect((await through("through-gateway")).status).toBe(200);
    // Relayed speech says the same.
    const speak = () => post(gatewayServer!, "/audio/speech", { model: "tts-qwen3-0-6b", input: "Hello.", voice: "af_heart", response_format: "wav" }, { key: caller });
    expect((await speak()).status).toBe(200);
    expect((await speak()).status).toBe(200);
    const speechRefused = await speak();
    expect(speechRefused.status).toBe(503);
    expect(((await speechRefused.json()) as { error: string }).error).toMatch(/is limiting this node's requests \(429: Rate limit exceeded.*gateway key/);
  });
});
