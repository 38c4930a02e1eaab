import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { revokeApiKey } from "../../src/store/apiKeys.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());
// This file sends many failing requests on purpose: a fresh key per test keeps each under the
// abuse guard's 20-failures-in-30-seconds block (tested on its own in rate-limits.test.ts).
beforeEach(() => {
  server.adminKey = server.createKey({ admin: true, usd: 10 }).key;
});

const valid = { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2 };

describe("bad input gets a clear 4xx in the reference's error shapes", () => {
  it.each([
    ["temperature of the wrong type", { ...valid, temperature: "hot" }, ["temperature"]],
    ["temperature out of range", { ...valid, temperature: 3 }, ["temperature"]],
    ["empty messages", { ...valid, messages: [] }, ["messages"]],
    ["a message with an unknown role", { ...valid, messages: [{ role: "robot", content: "x" }] }, ["messages", "0", "role"]],
    ["missing model", { messages: valid.messages }, ["model"]],
    ["a fractional max_tokens", { ...valid, max_tokens: 2.5 }, ["max_tokens"]],
    ["max_completion_tokens of zero (only max_tokens <= 0 means the default, as the provider documents)", { ...valid, max_completion_tokens: 0 }, ["max_completion_tokens"]],
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
    const error = await server
      .openai()
      .chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error.status).toBe(404);
    expect(JSON.stringify(error.error)).toContain("no-such-model");
    expect((await fetch(`${server.baseUrl}/models/no-such-model`)).status).toBe(404);
  });

  it("a prompt longer than the context is a 400 that says so, streaming or not", async () => {
    for (const stream of [false, true]) {
      const res = await post(server, "/chat/completions", { ...valid, stream, messages: [{ role: "user", content: "word ".repeat(5000) }] });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(/context holds 2048/);
    }
  });

  it("no credentials at all is the x402 discovery 402; a malformed header and an unknown key are 401s", async () => {
    const anonymous = await post(server, "/chat/completions", valid, { key: null });
    expect(anonymous.status).toBe(402);
    expect(((await anonymous.json()) as { x402Version: number }).x402Version).toBe(2);
    expect(anonymous.headers.get("payment-required")).toBeTruthy();
    expect((await post(server, "/chat/completions", valid, { key: null, headers: { authorization: "Basic abc" } })).status).toBe(401);
    const error = await server
      .openai("hth_not_a_real_key")
      .chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
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

  it.each([
    ["image_url", { image_url: { url: "data:image/png;base64,AAAA" } }, /does not support images/, "type"],
    ["input_audio", { input_audio: { data: "AAAA", format: "wav" } }, /does not support audio input.*no transcription model/, "type"],
    ["video_url", { video_url: { url: "https://example.com/v.mp4" } }, /does not support video input/, "type"],
    ["file", { file: { filename: "a.pdf", file_data: "AAAA" } }, /could not read the PDF file/, "file"],
  ])("a %s part the model cannot read is a 400 naming the part", async (type, payload, message, field) => {
    const res = await post(server, "/chat/completions", {
      ...valid,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "look" },
            { type, ...payload },
          ],
        },
      ],
    });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { details: Record<string, any> };
    expect(json.details.messages["0"].content["1"][field]._errors[0]).toMatch(message);
  });

  it("model feature suffixes: a good one applies, a bad one is a 400 naming the parameter under model", async () => {
    const ok = await post(server, "/chat/completions", { ...valid, model: "tiny-chat:include_service_system_prompt=false&strip_thinking_response=true" });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).service_parameters).toMatchObject({ include_service_system_prompt: false, strip_thinking_response: true });
    for (const [model, field] of [
      ["tiny-chat:warp_speed=true", "warp_speed"],
      ["tiny-chat:disable_thinking=sure", "disable_thinking"],
      ["tiny-chat:enable_web_search", null],
    ] as const) {
      const res = await post(server, "/chat/completions", { ...valid, model });
      expect(res.status, model).toBe(400);
      const json = (await res.json()) as { error: string; details: Record<string, any> };
      const node = field ? json.details.model[field] : json.details.model;
      expect(node._errors.length, model).toBe(1);
      if (field) expect(json.error).toContain(field);
    }
    // The body's own service_parameters win over the suffix.
    const both = await post(server, "/chat/completions", { ...valid, model: "tiny-chat:strip_thinking_response=true", service_parameters: { strip_thinking_response: false } });
    expect(((await both.json()) as any).service_parameters.strip_thinking_response).toBe(false);
    expect((await post(server, "/chat/completions", { ...valid, model: "no-such:strip_thinking_response=true" })).status).toBe(404);
  });

  it("enable_x_search is accepted, reported as unsupported here, and echoed as not applied", async () => {
    const res = await post(server, "/chat/completions", { ...valid, service_parameters: { enable_x_search: true } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("enable_x_search");
    expect(((await res.json()) as any).service_parameters.enable_x_search).toBe(false);
    const plain = await post(server, "/chat/completions", valid);
    expect(plain.headers.get("x-service-unsupported-parameters")).toBeNull();
  });

  it("store, verbosity, prompt_cache_retention and reasoning.summary are accepted and named as not honoured; bad values are a 400 naming the field", async () => {
    const res = await post(server, "/chat/completions", {
      ...valid,
      store: true,
      verbosity: "low",
      prompt_cache_retention: "24h",
      reasoning: { summary: "auto" },
      service_parameters: { enable_x_search: true },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("enable_x_search,store,verbosity,prompt_cache_retention,reasoning.summary");
    // What this node does anyway is not named.
    const honoured = await post(server, "/chat/completions", { ...valid, store: false, prompt_cache_retention: "default" });
    expect(honoured.status).toBe(200);
    expect(honoured.headers.get("x-service-unsupported-parameters")).toBeNull();
    for (const [field, value] of [
      ["store", "yes"],
      ["verbosity", "loud"],
      ["prompt_cache_retention", "1y"],
    ] as const) {
      const bad = await post(server, "/chat/completions", { ...valid, [field]: value });
      expect(bad.status, field).toBe(400);
      expect(((await bad.json()) as any).details, field).toHaveProperty(field);
    }
  });

  it("audio output is a 400 naming modalities, not a reply without the audio asked for; text output is served", async () => {
    const audio = await post(server, "/chat/completions", { ...valid, modalities: ["text", "audio"], audio: { voice: "alloy", format: "wav" } });
    expect(audio.status).toBe(400);
    const body = (await audio.json()) as any;
    expect(body.details).toHaveProperty("modalities");
    expect(body.error).toMatch(/text only.*\/audio\/speech/);
    const text = await post(server, "/chat/completions", { ...valid, modalities: ["text"] });
    expect(text.status).toBe(200);
    expect(text.headers.get("x-service-unsupported-parameters")).toBeNull();
    const unknown = await post(server, "/chat/completions", { ...valid, modalities: ["image"] });
    expect(unknown.status).toBe(400);
  });

  it("/responses names text.verbosity and max_tool_calls as not honoured", async () => {
    const res = await post(server, "/responses", { model: "tiny-chat", input: "hi", max_output_tokens: 2, text: { verbosity: "high" }, max_tool_calls: 2 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-service-unsupported-parameters")).toBe("max_tool_calls,text.verbosity");
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
