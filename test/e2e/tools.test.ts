import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { TINY_CHAT, writeChatModel } from "../../src/fixtures/gguf/chatModel.js";
import { CHATML_PLAIN_TEMPLATE } from "../../src/fixtures/gguf/chatTemplates.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

let server: TestServer;

const modelDirs: string[] = [];

beforeAll(async () => {
  // A model whose template has no tool-call syntax, as models without tool training ship.
  modelDirs.push(mkdtempSync(join(tmpdir(), "hearth-plain-")));
  const plainPath = join(modelDirs.at(-1)!, "plain.gguf");
  await writeChatModel(plainPath, { ...TINY_CHAT, chatTemplate: CHATML_PLAIN_TEMPLATE });
  // A model steered to open tool calls by itself (a random model never would), for tool_choice auto.
  modelDirs.push(mkdtempSync(join(tmpdir(), "hearth-eager-")));
  const eagerPath = join(modelDirs.at(-1)!, "eager.gguf");
  await writeChatModel(eagerPath, { ...TINY_CHAT, tokenBiases: { "<tool_call>": 8 } });
  server = await startTestServer({
    models: [tinyChatEntry(), tinyChatEntry({ id: "plain-chat", file: plainPath }), tinyChatEntry({ id: "eager-caller", file: eagerPath })],
  });
});
afterAll(async () => {
  await server?.stop();
  for (const dir of modelDirs) rmSync(dir, { recursive: true, force: true });
});

const WeatherArgs = z.strictObject({ city: z.string().max(10), unit: z.enum(["celsius", "fahrenheit"]), days: z.number().int().min(1).max(5) });
const TimeArgs = z.strictObject({ zone: z.enum(["UTC", "CET", "PST"]) });

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather in a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string", maxLength: 10 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] }, days: { type: "integer", minimum: 1, maximum: 5 } },
        required: ["city", "unit", "days"],
        additionalProperties: false,
      },
      strict: true,
    },
  },
  {
    type: "function",
    function: {
      name: "get_time",
      description: "The time in a zone",
      parameters: { type: "object", properties: { zone: { enum: ["UTC", "CET", "PST"] } }, required: ["zone"], additionalProperties: false },
    },
  },
];
const argsSchema: Record<string, z.ZodType> = { get_weather: WeatherArgs, get_time: TimeArgs };
const ask = [{ role: "user" as const, content: "What is the weather in Paris?" }];
// The tiny tokenizer spells the call's opening in many tokens; leave room for it and the arguments.
const room = { max_tokens: 200, temperature: 0.7 };

describe("tool calls with the official openai client", () => {
  it("a named tool_choice yields that call, in the standard's shape, with arguments that validate", async () => {
    const completion = await server.openai().chat.completions.create({
      model: "tiny-chat",
      messages: ask,
      tools,
      tool_choice: { type: "function", function: { name: "get_weather" } },
      seed: 11,
      ...room,
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    const calls = choice.message.tool_calls!;
    expect(calls).toHaveLength(1);
    const call = calls[0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(call.type).toBe("function");
    expect(call.function.name).toBe("get_weather");
    expect(WeatherArgs.parse(JSON.parse(call.function.arguments))).toBeTruthy();
  });

  it("required makes the model call one of the tools, on every seed", async () => {
    for (const seed of [1, 2, 3]) {
      const completion = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, tools, tool_choice: "required", seed, ...room });
      const choice = completion.choices[0]!;
      expect(choice.finish_reason).toBe("tool_calls");
      for (const call of choice.message.tool_calls! as OpenAI.ChatCompletionMessageFunctionToolCall[]) {
        expect(Object.keys(argsSchema)).toContain(call.function.name);
        expect(argsSchema[call.function.name]!.parse(JSON.parse(call.function.arguments))).toBeTruthy();
      }
    }
  });

  it("streams tool-call deltas that the client's stream helper and manual reassembly by index both rebuild", async () => {
    const request = { model: "tiny-chat", messages: ask, tools, tool_choice: "required" as const, seed: 5, ...room };
    const helper = server.openai().chat.completions.stream(request);
    const final = await helper.finalChatCompletion();
    const helperCall = final.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    expect(argsSchema[helperCall.function.name]!.parse(JSON.parse(helperCall.function.arguments))).toBeTruthy();

    const stream = await server.openai().chat.completions.create({ ...request, stream: true });
    const rebuilt: { id?: string; name?: string; arguments: string }[] = [];
    let argumentDeltas = 0;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      finish ??= choice.finish_reason;
      for (const delta of choice.delta.tool_calls ?? []) {
        const call = (rebuilt[delta.index] ??= { arguments: "" });
        if (delta.id) call.id = delta.id;
        if (delta.function?.name) call.name = delta.function.name;
        if (delta.function?.arguments) {
          call.arguments += delta.function.arguments;
          argumentDeltas++;
        }
      }
    }
    expect(finish).toBe("tool_calls");
    expect(rebuilt).toHaveLength(final.choices[0]!.message.tool_calls!.length);
    // Same seed, same sampling: the same call, delivered piece by piece.
    expect(rebuilt[0]!.name).toBe(helperCall.function.name);
    expect(rebuilt[0]!.arguments).toBe(helperCall.function.arguments);
    expect(rebuilt[0]!.id).toMatch(/^call_/);
    expect(argumentDeltas).toBeGreaterThan(3);
  });

  it("feeds a tool result back: the next turn's prompt carries it and the model answers in text", async () => {
    const first = await server.openai().chat.completions.create({
      model: "tiny-chat",
      messages: ask,
      tools,
      tool_choice: { type: "function", function: { name: "get_time" } },
      seed: 3,
      ...room,
    });
    const assistant = first.choices[0]!.message;
    const call = assistant.tool_calls![0]!;
    const followUp = (result: string) =>
      server.openai().chat.completions.create({
        model: "tiny-chat",
        messages: [...ask, { role: "assistant", content: null, tool_calls: assistant.tool_calls }, { role: "tool", tool_call_id: call.id, content: result }],
        tools,
        max_tokens: 8,
        temperature: 0,
      });
    const short = await followUp(JSON.stringify({ time: "12:00" }));
    const long = await followUp(JSON.stringify({ time: "12:00", note: "the quick brown fox jumps over the lazy dog ".repeat(5) }));
    expect(short.choices[0]!.finish_reason).toBe("length");
    expect(short.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(short.choices[0]!.message.tool_calls).toBeNull();
    // The result is in the prompt: a longer result makes a longer prompt.
    expect(long.usage!.prompt_tokens - short.usage!.prompt_tokens).toBeGreaterThan(40);
  });

  it("takes an unanswered call and a result without its call as sent (docs/api.md): both reach the prompt", async () => {
    const call: OpenAI.ChatCompletionMessageToolCall = { id: "call_1", type: "function", function: { name: "get_time", arguments: '{"zone":"UTC"}' } };
    const answer = (messages: OpenAI.ChatCompletionMessageParam[]) =>
      server.openai().chat.completions.create({ model: "tiny-chat", messages, tools, max_tokens: 2, temperature: 0 });
    const plain = await answer([...ask, { role: "user", content: "Never mind." }]);
    const unanswered = await answer([...ask, { role: "assistant", content: null, tool_calls: [call] }, { role: "user", content: "Never mind." }]);
    const stray = await answer([...ask, { role: "tool", tool_call_id: "call_elsewhere", content: "12:00" }, { role: "user", content: "Never mind." }]);
    expect(unanswered.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens);
    expect(stray.usage!.prompt_tokens).toBeGreaterThan(plain.usage!.prompt_tokens);
  });

  it("tool_choice auto: a call the model starts on its own is detected, held to the grammar and returned", async () => {
    const one = await server.openai().chat.completions.create({ model: "eager-caller", messages: ask, tools, parallel_tool_calls: false, max_tokens: 200, temperature: 0 });
    expect(one.choices[0]!.finish_reason).toBe("tool_calls");
    const [call] = one.choices[0]!.message.tool_calls! as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(argsSchema[call!.function.name]!.parse(JSON.parse(call!.function.arguments))).toBeTruthy();
    // With parallel calls allowed, the model goes on to call again after the first.
    const several = await server.openai().chat.completions.create({ model: "eager-caller", messages: ask, tools, max_tokens: 400, temperature: 0 });
    const calls = several.choices[0]!.message.tool_calls! as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(new Set(calls.map((c) => c.id)).size).toBe(calls.length);
    for (const c of calls.slice(0, 2)) expect(argsSchema[c.function.name]!.parse(JSON.parse(c.function.arguments))).toBeTruthy();
  });

  it("parallel_tool_calls false stops after one call; tool_choice none answers in text", async () => {
    const single = await server
      .openai()
      .chat.completions.create({ model: "tiny-chat", messages: ask, tools, tool_choice: "required", parallel_tool_calls: false, seed: 4, ...room });
    expect(single.choices[0]!.message.tool_calls).toHaveLength(1);
    const none = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, tools, tool_choice: "none", max_tokens: 6, temperature: 0 });
    expect(none.choices[0]!.message.tool_calls).toBeNull();
    expect(none.choices[0]!.message.content!.length).toBeGreaterThan(0);
  });

  it("GET /models advertises function calling only where the template has a tool-call syntax", async () => {
    const records = (await (await fetch(`${server.baseUrl}/models`)).json()) as { data: { id: string; model_spec: { capabilities: Record<string, unknown> } }[] };
    const capabilities = Object.fromEntries(records.data.map((m) => [m.id, m.model_spec.capabilities.supportsFunctionCalling]));
    expect(capabilities).toEqual({ "tiny-chat": true, "plain-chat": false, "eager-caller": true });
  });

  it.each([
    ["tools on a model without tool-call syntax", { model: "plain-chat", tools }, ["tools"], /does not support function calling/],
    [
      "a named tool_choice that is not in tools",
      { tools, tool_choice: { type: "function", function: { name: "nope" } } },
      ["tool_choice", "function", "name"],
      /not one of the functions/,
    ],
    ["required with no tools", { tool_choice: "required" }, ["tool_choice"], /defines no functions/],
    [
      "parameters that cannot be enforced",
      { tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { s: { type: "string", pattern: "^a" } } } } }] },
      ["tools", "0", "function", "parameters"],
      /pattern/,
    ],
    ["a bad function name", { tools: [{ type: "function", function: { name: "has space" } }] }, ["tools", "0", "function", "name"], /function names/],
  ])("%s -> 400 naming the field", async (_name, extra, path, message) => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: ask, max_tokens: 5, ...extra });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: string; details: Record<string, any> };
    let node = json.details;
    for (const key of path) node = node[key];
    expect(node._errors.join(" ")).toMatch(message);
  });
});
