import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listUsage } from "../../src/store/usage.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyChatEntry({ systemPrompt: "You are the house assistant of this test." }),
      tinyChatEntry({ id: "old-chat", deprecation: { date: "2027-01-31", warning: "old-chat is retired on 2027-01-31; use tiny-chat" } }),
    ],
  });
});
afterAll(() => server.stop());

const user = (content: string) => [{ role: "user" as const, content }];

describe("chat completions with the official openai client", () => {
  it("answers a non-streaming request in the standard shape with real token counts", async () => {
    const completion = await server.openai().chat.completions.create({ model: "tiny-chat", messages: user("Hello there"), max_tokens: 12, temperature: 0 });
    expect(completion.object).toBe("chat.completion");
    expect(completion.model).toBe("tiny-chat");
    expect(completion.id).toMatch(/^chatcmpl-/);
    const [choice] = completion.choices;
    expect(choice!.index).toBe(0);
    // Greedy decoding of the random model never picks end-of-turn, so the limit is what ends it.
    expect(choice!.finish_reason).toBe("length");
    expect(choice!.message.role).toBe("assistant");
    expect(choice!.message.content!.length).toBeGreaterThan(0);
    expect(completion.usage!.completion_tokens).toBe(12);
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(10);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + 12);
    const echo = (completion as unknown as { service_parameters: Record<string, unknown> }).service_parameters;
    expect(echo).toMatchObject({ enable_web_search: "off", include_service_system_prompt: true, strip_thinking_response: false });
  });

  it("streams token by token, ends with finish_reason, a usage chunk and [DONE]", async () => {
    const stream = await server.openai().chat.completions.create({
      model: "tiny-chat",
      messages: user("Tell me a story"),
      max_completion_tokens: 20,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    const contentChunks = chunks.filter((c) => c.choices[0]?.delta.content);
    // One chunk per token (a few may merge while a UTF-8 character or stop-string prefix is held).
    expect(contentChunks.length).toBeGreaterThan(10);
    const finish = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finish).toHaveLength(1);
    expect(finish[0]!.choices[0]!.finish_reason).toBe("length");
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBe(20);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it("gives the same text for the same seed and the same sampling", async () => {
    const ask = () => server.openai().chat.completions.create({ model: "tiny-chat", messages: user("Pick a word"), max_tokens: 16, temperature: 1, seed: 1234 });
    const [a, b] = [await ask(), await ask()];
    expect(a.choices[0]!.message.content).toBe(b.choices[0]!.message.content);
  });

  it("ends with finish_reason stop when the model ends its turn", async () => {
    // At temperature 1 the random model picks end-of-turn every ~85 tokens on average.
    const completion = await server.openai().chat.completions.create({ model: "tiny-chat", messages: user("Hi"), max_tokens: 1500, temperature: 1, seed: 7 });
    expect(completion.choices[0]!.finish_reason).toBe("stop");
    expect(completion.usage!.completion_tokens).toBeLessThan(1500);
  });

  it("cuts the text before a stop string and reports stop", async () => {
    const free = await server.openai().chat.completions.create({ model: "tiny-chat", messages: user("Go on"), max_tokens: 40, temperature: 0 });
    const text = free.choices[0]!.message.content!;
    const stopAt = text.slice(10, 13);
    const stopped = await server.openai().chat.completions.create({ model: "tiny-chat", messages: user("Go on"), max_tokens: 40, temperature: 0, stop: [stopAt] });
    expect(stopped.choices[0]!.finish_reason).toBe("stop");
    expect(stopped.choices[0]!.message.content).toBe(text.slice(0, text.indexOf(stopAt)));
  });

  it("prepends the model's system prompt unless the caller opts out, accepting the provider's spellings", async () => {
    const base = { model: "tiny-chat", messages: user("Hello"), max_tokens: 1, temperature: 0 };
    const withPrompt = (await (await post(server, "/chat/completions", base)).json()) as any;
    const optedOut = (await (await post(server, "/chat/completions", { ...base, service_parameters: { include_service_system_prompt: false } })).json()) as any;
    const alias = (await (await post(server, "/chat/completions", { ...base, venice_parameters: { include_venice_system_prompt: false } })).json()) as any;
    expect(optedOut.usage.prompt_tokens).toBeLessThan(withPrompt.usage.prompt_tokens);
    expect(alias.usage.prompt_tokens).toBe(optedOut.usage.prompt_tokens);
    expect(alias.service_parameters.include_service_system_prompt).toBe(false);
  });

  it("reuses the KV cache of a shared prefix and reports cached_tokens", async () => {
    const long = "Here is a long shared context. ".repeat(30);
    const first = await server
      .openai()
      .chat.completions.create({ model: "tiny-chat", messages: [{ role: "system", content: long }, ...user("one")], max_tokens: 2, temperature: 0 });
    const second = await server
      .openai()
      .chat.completions.create({ model: "tiny-chat", messages: [{ role: "system", content: long }, ...user("two")], max_tokens: 2, temperature: 0 });
    const cached = second.usage!.prompt_tokens_details!.cached_tokens!;
    expect(cached).toBeGreaterThan(first.usage!.prompt_tokens * 0.8);
    expect(cached).toBeLessThan(second.usage!.prompt_tokens);
  });

  it("lists models in the reference's record shape, filtered by type", async () => {
    const page = await server.openai().models.list();
    const ids = page.data.map((m) => m.id);
    expect(ids).toEqual(["tiny-chat", "old-chat"]);
    const record = (await (await fetch(`${server.baseUrl}/models/tiny-chat`)).json()) as Record<string, any>;
    // owned_by is the one value the reference's schema allows; who serves the model is served_by (docs/api.md).
    expect(record).toMatchObject({ id: "tiny-chat", object: "model", type: "text", owned_by: "venice.ai", served_by: "hearth", context_length: 2048 });
    // Derived from the model's own template, which has a tool-call syntax and no thought block.
    expect(record.model_spec.capabilities).toMatchObject({ supportsFunctionCalling: true, supportsReasoning: false, supportsResponseSchema: true, supportsLogProbs: true });
    expect(record.model_spec.availableContextTokens).toBe(2048);
    const tts = await (await fetch(`${server.baseUrl}/models?type=tts`)).json();
    expect(tts).toEqual({ object: "list", type: "tts", data: [] });
    const bad = await fetch(`${server.baseUrl}/models?type=nonsense`);
    expect(bad.status).toBe(400);
  });

  it("sets the common and model headers, and deprecation headers for a deprecated model", async () => {
    const res = await post(
      server,
      "/chat/completions",
      { model: "old-chat", messages: user("hi"), max_tokens: 1 },
      { headers: { "x-service-request-timestamp-ms": "1700000000123" } },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("cf-ray")).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get("x-service-version")).toMatch(/^\d{8}\.\d{6}$/);
    expect(res.headers.get("date")).toBeTruthy();
    expect(res.headers.get("x-service-model-id")).toBe("old-chat");
    expect(res.headers.get("x-service-model-name")).toBe("Tiny Chat");
    expect(res.headers.get("x-service-model-router")).toBe("llama.cpp/cpu");
    expect(res.headers.get("x-service-request-timestamp-ms")).toBe("1700000000123");
    expect(res.headers.get("x-service-model-deprecation-warning")).toContain("retired");
    expect(res.headers.get("x-service-model-deprecation-date")).toBe("2027-01-31");
    const ok = await post(server, "/chat/completions", { model: "tiny-chat", messages: user("hi"), max_tokens: 1 });
    expect(ok.headers.get("x-service-model-deprecation-warning")).toBeNull();
  });

  it("records a usage row per request with real token counts", async () => {
    const { key, accountId } = server.createKey();
    const completion = await server.openai(key).chat.completions.create({ model: "tiny-chat", messages: user("count me"), max_tokens: 5, temperature: 0 });
    const rows = listUsage(server.db, accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      endpoint: "/chat/completions",
      model: "tiny-chat",
      promptTokens: completion.usage!.prompt_tokens,
      completionTokens: 5,
      status: 200,
      finishReason: "length",
    });
    expect(rows[0]!.requestId).toBeTruthy();
  });
});
