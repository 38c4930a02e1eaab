import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeApiKey } from "../../src/store/apiKeys.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const valid = { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2 };

describe("bad input gets a clear 4xx in the reference's error shapes", () => {
  it.each([
    ["temperature of the wrong type", { ...valid, temperature: "hot" }, ["temperature"]],
    ["temperature out of range", { ...valid, temperature: 3 }, ["temperature"]],
    ["empty messages", { ...valid, messages: [] }, ["messages"]],
    ["a message with an unknown role", { ...valid, messages: [{ role: "robot", content: "x" }] }, ["messages", "0", "role"]],
    ["missing model", { messages: valid.messages }, ["model"]],
    ["max_tokens of zero", { ...valid, max_tokens: 0 }, ["max_tokens"]],
    ["n of zero", { ...valid, n: 0 }, ["n"]],
  ])("%s -> 400 with the zod issue tree naming the field", async (_name, body, path) => {
    const res = await post(server, "/chat/completions", body);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: string; details: Record<string, any> };
    expect(json.error).toMatch(/Invalid request parameters/);
    let node = json.details;
    for (const key of path) node = node[key];
    expect(node._errors.length).toBeGreaterThan(0);
    expect(res.headers.get("x-service-host-name")).toBeTruthy();
  });

  it("undocumented fields pass through unvalidated", async () => {
    const res = await post(server, "/chat/completions", { ...valid, some_future_field: { anything: true } });
    expect(res.status).toBe(200);
  });

  it("malformed JSON is a 400, never a 500", async () => {
    const res = await post(server, "/chat/completions", '{"model": "tiny-chat", "messages": [');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/Malformed JSON/);
  });

  it("a wrong content type is a 415", async () => {
    const res = await post(server, "/chat/completions", "model=tiny-chat", { headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({ error: "Invalid request content-type: expected application/json" });
  });

  it("an unknown model is a 404 that names it", async () => {
    const error = await server.openai().chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error.status).toBe(404);
    expect(JSON.stringify(error.error)).toContain("no-such-model");
    expect((await fetch(`${server.baseUrl}/models/no-such-model`)).status).toBe(404);
  });

  it("a prompt longer than the context is a 400 that says so", async () => {
    const res = await post(server, "/chat/completions", { ...valid, messages: [{ role: "user", content: "word ".repeat(5000) }] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/context holds 2048/);
  });

  it("a missing key, a malformed header and an unknown key are 401s", async () => {
    expect((await post(server, "/chat/completions", valid, { key: null })).status).toBe(401);
    expect((await post(server, "/chat/completions", valid, { key: null, headers: { authorization: "Basic abc" } })).status).toBe(401);
    const error = await server.openai("hth_not_a_real_key").chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "x" }] }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("a revoked key stops working on its next request", async () => {
    const { key, keyId } = server.createKey();
    expect((await post(server, "/chat/completions", valid, { key })).status).toBe(200);
    revokeApiKey(server.db, keyId);
    const res = await post(server, "/chat/completions", valid, { key });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: "Authentication failed: invalid, revoked or expired API key" });
  });

  it("content parts the model cannot read are a 400 naming the part", async () => {
    const res = await post(server, "/chat/completions", {
      ...valid,
      messages: [{ role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] }],
    });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { details: Record<string, any> };
    expect(json.details.messages["0"].content["1"].type._errors[0]).toMatch(/image_url/);
  });

  it("web search switched on without a configured provider is a 400", async () => {
    const res = await post(server, "/chat/completions", { ...valid, service_parameters: { enable_web_search: "on" } });
    expect(res.status).toBe(400);
    const auto = await post(server, "/chat/completions", { ...valid, service_parameters: { enable_web_search: "auto" } });
    expect(auto.status).toBe(200);
  });

  it("an unknown route is a 404 in the standard shape", async () => {
    const res = await fetch(`${server.baseUrl}/no/such/route`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: string }).error).toMatch(/No route/);
  });
});
