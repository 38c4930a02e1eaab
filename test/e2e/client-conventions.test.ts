import { Writable } from "node:stream";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/**
 * What the standard's clients rely on beyond the bodies: request ids they can quote, error
 * fields they read, and a base path they may get wrong.
 */

let captured = "";
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    captured += chunk.toString();
    done();
  },
});

let provider: TestServer;
let standard: TestServer;
beforeAll(async () => {
  [provider, standard] = await Promise.all([
    startTestServer({ models: [tinyChatEntry()], logger: createLogger("info", { destination: sink }) }),
    startTestServer({ models: [tinyChatEntry({ pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } })], config: { errorFormat: "standard" } }),
  ]);
});
afterAll(() => Promise.all([provider?.stop(), standard?.stop()]));

const ask = { model: "tiny-chat", messages: [{ role: "user" as const, content: "Hello" }], max_tokens: 3, temperature: 0 };

describe("request ids", () => {
  it("sends x-request-id on every response: the node's id (as in CF-RAY) unless the client sent its own", async () => {
    const { response, request_id } = await provider.openai().chat.completions.create(ask).withResponse();
    expect(request_id).toBe(response.headers.get("cf-ray"));
    expect(request_id).toMatch(/^[0-9a-f-]{36}$/);

    for (const res of [
      await fetch(`${provider.baseUrl}/models`),
      await fetch(`${provider.baseUrl}/no/such/route`),
      await post(provider, "/chat/completions", { model: "tiny-chat" }),
    ]) {
      expect(res.headers.get("x-request-id")).toBe(res.headers.get("cf-ray"));
    }

    const own = await post(provider, "/chat/completions", ask, { headers: { "x-request-id": "trace-42.abc" } });
    expect(own.status).toBe(200);
    expect(own.headers.get("x-request-id")).toBe("trace-42.abc");
    // The node's own id stays unique (it keys holds and usage rows), whatever the client sends.
    const again = await post(provider, "/chat/completions", ask, { headers: { "x-request-id": "trace-42.abc" } });
    expect(again.status).toBe(200);
    expect(again.headers.get("cf-ray")).not.toBe(own.headers.get("cf-ray"));

    // An unusable id (too long, or with characters that do not belong in a header or a log) is replaced by the node's.
    const long = await post(provider, "/chat/completions", ask, { headers: { "x-request-id": "x".repeat(200) } });
    expect(long.headers.get("x-request-id")).toBe(long.headers.get("cf-ray"));
  });

  it("logs the client's id next to the node's", async () => {
    const from = captured.length;
    const res = await fetch(`${provider.baseUrl}/models`, { headers: { "x-request-id": "client-side-7" } });
    expect(res.status).toBe(200);
    const nodeId = res.headers.get("cf-ray");
    for (let i = 0; i < 50 && !captured.slice(from).includes(nodeId!); i++) await new Promise((r) => setTimeout(r, 20));
    const access = captured
      .slice(from)
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.requestId === nodeId);
    expect(access).toMatchObject({ requestId: nodeId, clientRequestId: "client-side-7" });
  });
});

describe("error shapes", () => {
  it("answers in the provider's shape by default", async () => {
    const res = await post(provider, "/chat/completions", { ...ask, temperature: 9 });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: unknown; details: unknown };
    expect(typeof body.error).toBe("string");
    expect(body.details).toHaveProperty("temperature");
  });

  it("answers in the standard's shape with --error-format standard, which the official client reads", async () => {
    const client = standard.openai();
    const bad = await client.chat.completions.create({ ...ask, temperature: 9 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    const badRequest = bad as InstanceType<typeof OpenAI.BadRequestError>;
    expect(badRequest.type).toBe("invalid_request_error");
    expect(badRequest.param).toBe("temperature");
    expect(badRequest.message).toMatch(/temperature/);

    const missing = (await client.chat.completions.create({ ...ask, model: "no-such-model" }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.NotFoundError>;
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.type).toBe("not_found_error");
    expect(missing.code).toBe("not_found");
    expect(missing.message).toMatch(/no-such-model/);

    const unauthenticated = (await standard
      .openai("hth_not_a_key")
      .chat.completions.create(ask)
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(unauthenticated).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(unauthenticated.type).toBe("authentication_error");

    const poor = standard.createKey({ usd: 0 });
    const broke = (await standard
      .openai(poor.key)
      .chat.completions.create(ask)
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(broke.status).toBe(402);
    expect(broke.code).toBe("INSUFFICIENT_BALANCE");
    expect(broke.type).toBe("insufficient_quota");

    const raw = (await (await post(standard, "/chat/completions", { ...ask, temperature: 9 })).json()) as { error: Record<string, unknown> };
    expect(Object.keys(raw.error)).toEqual(expect.arrayContaining(["message", "type", "code", "param"]));
  });
});

describe("base path", () => {
  it("serves /v1 as an alias of /api/v1, so a client given the server's root plus /v1 works unchanged", async () => {
    const client = new OpenAI({ apiKey: provider.adminKey, baseURL: `${provider.url}/v1`, maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain("tiny-chat");
    const completion = await client.chat.completions.create(ask);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it("names /api/v1 in the 404 of a client on the wrong base path", async () => {
    const res = await fetch(`${provider.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ask) });
    expect(res.status).toBe(404);
    const { error } = (await res.json()) as { error: string };
    expect(error).toContain("/api/v1/chat/completions");
    // A long path is quoted only in part.
    const long = await fetch(`${provider.url}/${"a".repeat(5000)}`, { method: "POST" });
    expect(long.status).toBe(404);
    expect(((await long.json()) as { error: string }).error.length).toBeLessThan(400);
  });
});
