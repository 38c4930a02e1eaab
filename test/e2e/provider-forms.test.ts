import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

/** Chat requests in forms the provider's document allows and the standard's SDK types do not. */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const ask = (extra: Record<string, unknown>) =>
  post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "Weather in Oslo?" }], temperature: 0, ...extra });

describe("the provider's forms of a chat request", () => {
  it("max_tokens of 0 or less is ignored (the model's default applies), as the provider documents", async () => {
    for (const max_tokens of [0, -5]) {
      const res = await ask({ max_tokens });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBeGreaterThan(0);
    }
    expect((await ask({ max_tokens: 1.5 })).status).toBe(400);
  });

  it("a tools[] item without type is a function tool, and tool_choice may name the function as a string", async () => {
    const res = await ask({
      tools: [{ function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string", enum: ["Oslo", "Bergen"] } }, required: ["city"] } } }],
      tool_choice: "get_weather",
      max_tokens: 48,
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { choices: { message: { tool_calls?: { type: string; function: { name: string; arguments: string } }[] } }[] };
    const call = body.choices[0]!.message.tool_calls?.[0];
    expect(call).toMatchObject({ type: "function", function: { name: "get_weather" } });
    expect(["Oslo", "Bergen"]).toContain(JSON.parse(call!.function.arguments).city);
    // A name no tool has is still a 400 naming tool_choice.
    const unknown = await ask({ tools: [{ function: { name: "get_weather" } }], tool_choice: "get_time" });
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain("tool_choice");
  });

  it("top_logprobs above 20 is served as 20 and the response says so", async () => {
    const res = await ask({ logprobs: true, top_logprobs: 25, max_tokens: 3 });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get("x-service-clamped-parameters")).toBe("top_logprobs=20");
    const body = (await res.json()) as { choices: { logprobs: { content: { top_logprobs: unknown[] }[] } }[] };
    for (const token of body.choices[0]!.logprobs.content) expect(token.top_logprobs).toHaveLength(20);
    const plain = await ask({ logprobs: true, top_logprobs: 2, max_tokens: 2 });
    expect(plain.headers.get("x-service-clamped-parameters")).toBeNull();
  });
});
