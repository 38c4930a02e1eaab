import { createOpenAI } from "@ai-sdk/openai";
import { tool as langchainTool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { generateObject, generateText, streamText, tool } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/**
 * POST /responses as the Vercel AI SDK (whose OpenAI provider calls the Responses API by
 * default) and LangChain JS (`useResponsesApi: true`) call it, on the tiny demo model: its
 * text is gibberish, so tool calls and objects are forced and the tests look at shapes.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ models: [tinyChatEntry()] });
});
afterAll(() => server?.stop());

const City = z.object({ city: z.enum(["Paris", "Rome"]) });

describe("the Vercel AI SDK", () => {
  const provider = () => createOpenAI({ baseURL: server.baseUrl, apiKey: server.adminKey });

  it("generateText and streamText", async () => {
    const model = provider()("tiny-chat");
    const generated = await generateText({ model, prompt: "Hello", maxOutputTokens: 6, temperature: 0 });
    expect(generated.text.length).toBeGreaterThan(0);
    expect(["stop", "length"]).toContain(generated.finishReason);
    expect(generated.usage.inputTokens).toBeGreaterThan(0);
    expect(generated.usage.outputTokens).toBeGreaterThan(0);
    expect(generated.response.id).toMatch(/^resp_/);

    const streamed = streamText({ model, prompt: "Hello", maxOutputTokens: 6, temperature: 0 });
    const pieces: string[] = [];
    for await (const piece of streamed.textStream) pieces.push(piece);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe(await streamed.text);
    expect((await streamed.usage).outputTokens).toBeGreaterThan(0);
    expect(["stop", "length"]).toContain(await streamed.finishReason);
  });

  it("a forced tool call", async () => {
    const result = await generateText({
      model: provider()("tiny-chat"),
      prompt: "What is the weather in Paris?",
      tools: { get_weather: tool({ description: "The weather in a city", inputSchema: City }) },
      toolChoice: { type: "tool", toolName: "get_weather" },
      maxOutputTokens: 200,
    });
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({ toolName: "get_weather", input: { city: expect.stringMatching(/^(Paris|Rome)$/) } });
    expect(result.finishReason).toBe("tool-calls");
  });

  // Greedy throughout: a sampled reply from the random-weight model can be end-of-text at once
  // (an empty text): it failed so once, in a clean-clone run.
  it("continues a conversation: the tool call and its result passed back, an earlier answer by item_reference", async () => {
    const requests: unknown[] = [];
    const model = createOpenAI({
      baseURL: server.baseUrl,
      apiKey: server.adminKey,
      fetch: async (url, init) => {
        requests.push(JSON.parse(String(init?.body)));
        return fetch(url, init);
      },
    })("tiny-chat");
    const question = { role: "user" as const, content: "What is the weather in Paris?" };
    const getWeather = tool({ description: "The weather in a city", inputSchema: City, execute: async ({ city }) => ({ city, celsius: 21 }) });
    const first = await generateText({ model, messages: [question], tools: { get_weather: getWeather }, toolChoice: "required", maxOutputTokens: 200, temperature: 0 });
    expect(first.toolResults).toHaveLength(1);
    const second = await generateText({
      model,
      messages: [question, ...first.response.messages],
      tools: { get_weather: getWeather },
      toolChoice: "none",
      maxOutputTokens: 4,
      temperature: 0,
    });
    expect(second.text.length).toBeGreaterThan(0);
    const sentTypes = (requests[1] as { input: { type?: string }[] }).input.map((item) => item.type);
    expect(sentTypes).toEqual(expect.arrayContaining(["function_call", "function_call_output"]));

    // The SDK refers to its earlier answer (a stored item) by id; the node finds it.
    const third = await generateText({
      model,
      messages: [question, ...first.response.messages, ...second.response.messages, { role: "user", content: "And Rome?" }],
      maxOutputTokens: 4,
      temperature: 0,
    });
    expect(JSON.stringify(requests.at(-1))).toContain('"item_reference"');
    expect(third.text.length).toBeGreaterThan(0);
  });

  it("generateObject with a zod schema", async () => {
    const Weather = z.object({ city: z.enum(["Paris", "Rome"]), celsius: z.number().int().min(-40).max(50) });
    const { object } = await generateObject({ model: provider()("tiny-chat"), schema: Weather, prompt: "Weather?", maxOutputTokens: 200 });
    expect(Weather.safeParse(object).success).toBe(true);
  });
});

describe("LangChain JS", () => {
  const chat = (extra: Record<string, unknown> = {}) =>
    new ChatOpenAI({ model: "tiny-chat", configuration: { baseURL: server.baseUrl }, apiKey: server.adminKey, useResponsesApi: true, maxRetries: 0, ...extra });

  it("invoke and stream", async () => {
    const message = await chat({ maxTokens: 6, temperature: 0 }).invoke("Hello");
    expect(typeof message.text).toBe("string");
    expect(message.text.length).toBeGreaterThan(0);
    expect(message.usage_metadata).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect(message.id).toMatch(/^(resp|msg)_/);

    const pieces: string[] = [];
    for await (const chunk of await chat({ maxTokens: 6, temperature: 0 }).stream("Hello")) pieces.push(chunk.text);
    expect(pieces.join("").length).toBeGreaterThan(0);
  });

  it("bindTools produces a tool call", async () => {
    const getWeather = langchainTool(async ({ city }) => `sunny in ${city}`, { name: "get_weather", description: "The weather in a city", schema: City });
    const message = await chat({ maxTokens: 200 }).bindTools([getWeather], { tool_choice: "get_weather" }).invoke("What is the weather in Paris?");
    expect(message.tool_calls).toHaveLength(1);
    expect(message.tool_calls![0]).toMatchObject({ name: "get_weather", args: { city: expect.stringMatching(/^(Paris|Rome)$/) }, id: expect.any(String) });
  });
});
