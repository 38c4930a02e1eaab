import { describe, expect, it } from "vitest";
import {
  assembleConversation,
  requireFunctionCalling,
  requireStructuredOutput,
  toChoiceCount,
  toEngineMessages,
  toLogprobs,
  toPromptCache,
  toReasoning,
  toResponseFormat,
  toSampling,
  toToolOptions,
} from "../../src/api/chat/fromChatRequest.js";
import { SERVICE_PARAMETER_DEFAULTS, ChatCompletionRequest, type AppliedServiceParameters } from "../../src/api/chat/schema.js";
import { toChoice, toChunkChoice, toUsage, toWireFinish, toWireLogprobs } from "../../src/api/chat/toChatCompletion.js";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import type { ChatChoiceResult, ChatFeatures, ChatGenerateResult, FinishReason, TokenLogprob } from "../../src/engines/types.js";
import { InvalidRequestError } from "../../src/errors.js";

/**
 * Behaviour tables for the pure chat translators: the wire request to the engine's options
 * (fromChatRequest) and the engine's results to the wire's response and chunks (toChatCompletion).
 * Requests go through the real zod schema first, as the route does.
 */

const entry = ModelEntry.parse({ id: "m", type: "text", backend: "llama", file: "/models/m.gguf", systemPrompt: "Be brief." });
const features: ChatFeatures = {
  functionCalling: true,
  reasoning: true,
  reasoningToggle: true,
  responseSchema: true,
  logprobs: true,
  dynamicTemperature: true,
  maxChoices: 4,
  vocabularySize: 256,
  infill: false,
};
const none: ChatFeatures = { ...features, functionCalling: false, responseSchema: false, logprobs: false, dynamicTemperature: false, maxChoices: 1 };
const params: AppliedServiceParameters = { ...SERVICE_PARAMETER_DEFAULTS };

const request = (fields: Record<string, unknown>) => ChatCompletionRequest.parse({ model: "m", messages: [{ role: "user", content: "hi" }], ...fields }) as ChatCompletionRequest;

/** The 400 a translator throws: its message and the field path its details name. */
function rejection(run: () => unknown): { message: string; details: unknown } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return { message: (error as InvalidRequestError).message, details: (error as InvalidRequestError & { details: unknown }).details };
  }
  throw new Error("expected a 400");
}

describe("fromChatRequest: messages", () => {
  // Text parts need nothing from the reading context (no file, no transcription model).
  const reading = {
    entry,
    models: undefined as never,
    meterFor: undefined as never,
    limits: { maxFileBytes: 1e6, maxFileChars: 1e5, requestTimeoutMs: 1000 },
    visual: { kind: "none" as const, reason: "it cannot see" },
    fetchUrls: false,
  };

  it("maps each role, joins text parts with newlines, treats developer as system", async () => {
    const wire = request({
      messages: [
        { role: "system", content: "Rules." },
        { role: "developer", content: [{ type: "text", text: "More rules." }] },
        {
          role: "user",
          content: [
            { type: "text", text: "line one" },
            { type: "text", text: "line two" },
          ],
        },
        { role: "assistant", content: null, reasoning_content: "thinking", tool_calls: [{ id: "call_1", type: "function", function: { name: "add", arguments: '{"a":1}' } }] },
        { role: "tool", content: "2", tool_call_id: "call_1" },
        {
          role: "assistant",
          content: "It is 2.",
          reasoning_details: [
            { type: "reasoning.text", text: "a" },
            { type: "reasoning.text", text: "b" },
          ],
          thought_signature: "sig",
        },
      ],
    });
    expect(await toEngineMessages(wire.messages, reading)).toEqual([
      { role: "system", content: "Rules." },
      { role: "system", content: "More rules." },
      { role: "user", content: "line one\nline two" },
      {
        role: "assistant",
        content: null,
        reasoning: "thinking",
        toolCalls: [{ id: "call_1", name: "add", arguments: '{"a":1}' }],
        reasoningDetails: undefined,
        thoughtSignature: undefined,
      },
      { role: "tool", content: "2", toolCallId: "call_1" },
      {
        role: "assistant",
        content: "It is 2.",
        // reasoning_content is absent: the reasoning_details' texts, joined, stand in for it.
        reasoning: "ab",
        toolCalls: undefined,
        reasoningDetails: [
          { type: "reasoning.text", text: "a" },
          { type: "reasoning.text", text: "b" },
        ],
        thoughtSignature: "sig",
      },
    ]);
  });

  it("reads a plain-text file part into a <file> wrapper a document cannot close", async () => {
    const text = "notes </file> more";
    const wire = request({
      messages: [{ role: "user", content: [{ type: "file", file: { filename: 'a"b.txt', file_data: `data:text/plain;base64,${Buffer.from(text).toString("base64")}` } }] }],
    });
    expect(await toEngineMessages(wire.messages, reading)).toEqual([{ role: "user", content: '<file name="a_b.txt">\nnotes <\\/file> more\n</file>' }]);
  });

  it.each([
    [
      "image_url",
      { type: "image_url", image_url: { url: "https://x/y.png" } },
      'messages.0.content.0.type: the model "m" does not support images (image_url parts): it cannot see',
    ],
    ["file_id", { type: "file", file: { file_id: "file-1" } }, "messages.0.content.0.file.file_id: this node has no Files API: send the file's content in file_data (a data URL)"],
  ])("refuses a %s part with a 400 naming the part", async (_name, part, message) => {
    const wire = request({ messages: [{ role: "user", content: [part] }] });
    await expect(toEngineMessages(wire.messages, reading)).rejects.toThrow(message);
  });

  it("puts the node's system prompt, then the caller's system messages, before the conversation", () => {
    const caller = [
      { role: "system" as const, content: "Caller rules." },
      { role: "user" as const, content: "hi" },
    ];
    const assembled = assembleConversation(caller, entry, params, undefined);
    expect(assembled.messages).toEqual([{ role: "system", content: "Be brief." }, ...caller]);
    expect([0, 1].map(assembled.positionOf)).toEqual([1, 2]);
    const optedOut = assembleConversation(caller, entry, { ...params, include_service_system_prompt: false }, undefined);
    expect(optedOut.messages).toEqual(caller);
  });

  it("marks the last message with a cache_control as the cache breakpoint", () => {
    const wire = request({
      prompt_cache_key: "k",
      messages: [
        { role: "system", content: "s", cache_control: { type: "ephemeral" } },
        { role: "user", content: [{ type: "text", text: "u", cache_control: { type: "ephemeral" } }] },
        { role: "assistant", content: "a" },
      ],
    });
    expect(toPromptCache(wire, (i) => i + 10)).toEqual({ key: "k", breakpointMessage: 11 });
    expect(toPromptCache(request({}), (i) => i)).toEqual({ key: undefined, breakpointMessage: undefined });
  });
});

describe("fromChatRequest: sampling, n, logprobs", () => {
  it("takes the request's values and the model's defaults for what it leaves out", () => {
    expect(toSampling(request({}), entry, features)).toEqual({
      temperature: 0.8,
      topP: 0.95,
      topK: undefined,
      minP: undefined,
      seed: undefined,
      repetitionPenalty: undefined,
      frequencyPenalty: undefined,
      presencePenalty: undefined,
      dynamicTemperature: undefined,
    });
    expect(
      toSampling(request({ temperature: 0.2, top_p: 0.5, top_k: 3, min_p: 0.1, seed: 7, repetition_penalty: 1.1, frequency_penalty: -1, presence_penalty: 1 }), entry, features),
    ).toEqual({
      temperature: 0.2,
      topP: 0.5,
      topK: 3,
      minP: 0.1,
      seed: 7,
      repetitionPenalty: 1.1,
      frequencyPenalty: -1,
      presencePenalty: 1,
      dynamicTemperature: undefined,
    });
  });

  it.each([
    [
      { min_temp: 0.1, max_temp: 1.5 },
      { min: 0.1, max: 1.5 },
    ],
    // max defaults to the temperature (or min, if higher); min defaults to 0.
    [
      { min_temp: 0.3, temperature: 0.9 },
      { min: 0.3, max: 0.9 },
    ],
    [
      { min_temp: 1.2, temperature: 0.9 },
      { min: 1.2, max: 1.2 },
    ],
    [{ max_temp: 1 }, { min: 0, max: 1 }],
  ])("dynamic temperature %o -> %o", (fields, expected) => {
    expect(toSampling(request(fields), entry, features).dynamicTemperature).toEqual(expected);
  });

  it("refuses dynamic temperature, logprobs and n beyond what the model has", () => {
    expect(rejection(() => toSampling(request({ max_temp: 1 }), entry, none)).message).toBe('max_temp: the model "m" does not support dynamic temperature');
    expect(rejection(() => toLogprobs(request({ logprobs: true }), "m", none)).message).toBe('logprobs: the model "m" does not report log probabilities');
    expect(rejection(() => toChoiceCount(request({ n: 5 }), "m", features)).message).toBe('n: the model "m" generates at most 4 choices per request (its parallel sequences)');
  });

  it.each([
    [{}, undefined],
    [{ logprobs: false }, undefined],
    [{ logprobs: true }, { top: 0 }],
    [{ logprobs: true, top_logprobs: 3 }, { top: 3 }],
  ])("logprobs %o -> %o", (fields, expected) => {
    expect(toLogprobs(request(fields), "m", features)).toEqual(expected);
  });

  it.each([
    [{}, 1],
    [{ n: 4 }, 4],
  ])("n %o -> %i choices", (fields, expected) => {
    expect(toChoiceCount(request(fields), "m", features)).toBe(expected);
  });

  it.each([
    ["a string", { stop: "END" }, "END"],
    ["a list", { stop: ["a", "b"] }, ["a", "b"]],
    ["null", { stop: null }, null],
  ])("stop as %s passes the schema unchanged", (_name, fields, expected) => {
    expect(request(fields).stop).toEqual(expected);
  });

  it("stop takes at most 16 strings", () => {
    expect(ChatCompletionRequest.safeParse({ model: "m", messages: [{ role: "user", content: "hi" }], stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }).success).toBe(false);
  });
});

describe("fromChatRequest: tools and tool_choice", () => {
  const add = { type: "function", function: { name: "add", description: "Adds", parameters: { type: "object", properties: { a: { type: "number" } }, required: ["a"] } } };
  const noParams = { type: "function", function: { name: "now" } };

  it("keeps function tools (built-in search tools are not the engine's), with auto and parallel calls by default", () => {
    const tools = toToolOptions(request({ tools: [add, { type: "web_search" }, noParams] }));
    expect(tools?.choice).toBe("auto");
    expect(tools?.parallel).toBe(true);
    expect(tools?.functions.map((f) => [f.name, f.description, f.parametersSchema])).toEqual([
      ["add", "Adds", add.function.parameters],
      // A function without parameters takes an empty object.
      ["now", undefined, { type: "object", properties: {} }],
    ]);
  });

  it.each([
    ["none", "none"],
    ["required", "required"],
    [{ type: "function", function: { name: "add" } }, { name: "add" }],
  ])("tool_choice %o -> %o", (choice, expected) => {
    expect(toToolOptions(request({ tools: [add], tool_choice: choice, parallel_tool_calls: false }))).toMatchObject({ choice: expected, parallel: false });
  });

  it("is undefined without function tools, unless tool_choice asks for a call", () => {
    expect(toToolOptions(request({}))).toBeUndefined();
    expect(toToolOptions(request({ tools: [{ type: "web_search" }], tool_choice: "auto" }))).toBeUndefined();
    expect(rejection(() => toToolOptions(request({ tool_choice: "required" }))).message).toBe("tool_choice: tool_choice asks for a function call but tools defines no functions");
  });

  it("refuses a duplicate function, an unknown tool_choice name and an unsupported schema, naming the field", () => {
    expect(rejection(() => toToolOptions(request({ tools: [add, add] }))).message).toBe('tools.1.function.name: the function "add" is defined twice');
    expect(rejection(() => toToolOptions(request({ tools: [add], tool_choice: { type: "function", function: { name: "sub" } } }))).message).toBe(
      'tool_choice.function.name: "sub" is not one of the functions in tools',
    );
    const bad = rejection(() => toToolOptions(request({ tools: [{ type: "function", function: { name: "f", parameters: { type: "object", patternProperties: { x: {} } } } }] })));
    expect(bad.message).toMatch(/^tools\.0\.function\.parameters: unsupported JSON schema/);
  });

  it("refuses tools on a model without function calling, except with tool_choice none", () => {
    const tools = toToolOptions(request({ tools: [add] }));
    expect(requireFunctionCalling(tools, "m", features)).toBe(tools);
    expect(rejection(() => requireFunctionCalling(tools, "m", none)).message).toBe(
      'tools: the model "m" does not support function calling (its chat template has no tool-call syntax)',
    );
    const off = toToolOptions(request({ tools: [add], tool_choice: "none" }));
    expect(requireFunctionCalling(off, "m", none)).toBe(off);
  });
});

describe("fromChatRequest: response_format", () => {
  const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] };

  it.each([
    ["absent", {}, undefined],
    ["text", { response_format: { type: "text" } }, undefined],
    ["json_object", { response_format: { type: "json_object" } }, { type: "json_object" }],
  ])("%s", (_name, fields, expected) => {
    expect(toResponseFormat(request(fields))).toEqual(expected);
  });

  it("json_schema nested as {name, schema, strict} (the standard) or the schema itself (the reference)", () => {
    const nested = toResponseFormat(request({ response_format: { type: "json_schema", json_schema: { name: "answer", strict: true, schema } } }));
    expect(nested).toMatchObject({ type: "json_schema", source: { name: "answer", strict: true, schema } });
    const bare = toResponseFormat(request({ response_format: { type: "json_schema", json_schema: schema } }));
    expect(bare).toMatchObject({ type: "json_schema", source: { name: undefined, strict: undefined, schema } });
    // Either way the engine gets the same compiled subset.
    expect(nested?.type === "json_schema" && bare?.type === "json_schema" && nested.schema).toEqual(bare?.type === "json_schema" && bare.schema);
  });

  it("refuses an unsupported schema at the nested path, and structured output on a model without it", () => {
    // Keywords the grammar cannot hold (pattern, patternProperties...) are checked after generation; a reference it cannot follow is refused.
    const bad = { type: "object", properties: { x: { $ref: "https://example.com/schema.json" } } };
    expect(rejection(() => toResponseFormat(request({ response_format: { type: "json_schema", json_schema: { name: "x", schema: bad } } }))).message).toMatch(
      /^response_format\.json_schema\.schema: unsupported JSON schema.*\$ref/,
    );
    expect(rejection(() => requireStructuredOutput({ type: "json_object" }, "m", none)).message).toBe('response_format: the model "m" does not support structured output');
  });
});

describe("fromChatRequest: reasoning", () => {
  it.each([
    [{}, params, { mode: "auto" }],
    [{ reasoning_effort: "none" }, params, { mode: "off" }],
    [{}, { ...params, disable_thinking: true }, { mode: "off" }],
    [{ reasoning_effort: "high" }, { ...params, disable_thinking: true }, { mode: "off" }],
    [{ reasoning_effort: "minimal" }, params, { mode: "on", budgetShare: 1 / 8, effort: "minimal" }],
    [{ reasoning_effort: "low" }, params, { mode: "on", budgetShare: 1 / 4, effort: "low" }],
    [{ reasoning_effort: "medium" }, params, { mode: "on", budgetShare: 1 / 2, effort: "medium" }],
    [{ reasoning: { effort: "high" } }, params, { mode: "on", budgetShare: 3 / 4, effort: "high" }],
    [{ reasoning_effort: "xhigh" }, params, { mode: "on", budgetShare: 7 / 8, effort: "xhigh" }],
    // reasoning_effort wins over reasoning.effort.
    [{ reasoning_effort: "max", reasoning: { effort: "low" } }, params, { mode: "on", budgetShare: 1, effort: "max" }],
  ])("%o with %o -> %o", (fields, applied, expected) => {
    expect(toReasoning(request(fields), applied as AppliedServiceParameters)).toEqual(expected);
  });
});

describe("toChatCompletion", () => {
  it.each([
    ["stop", "stop"],
    ["length", "length"],
    ["tool_calls", "tool_calls"],
    // A client that went away gets no answer; should one be written, it says stop.
    ["abort", "stop"],
  ] as [FinishReason, string][])("finish reason %s -> %s", (reason, wire) => {
    expect(toWireFinish(reason)).toBe(wire);
  });

  it("usage sums prompt and completion and reports cached, cache-write and reasoning tokens", () => {
    const result = { promptTokens: 12, completionTokens: 5, reasoningTokens: 2, cachedTokens: 8, cacheWriteTokens: 4 } as ChatGenerateResult;
    expect(toUsage(result)).toEqual({
      prompt_tokens: 12,
      completion_tokens: 5,
      total_tokens: 17,
      prompt_tokens_details: { cached_tokens: 8, cache_creation_input_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 2 },
    });
  });

  const token = (text: string, logprob: number, top: [string, number][] = []): TokenLogprob => ({
    token: text,
    logprob,
    bytes: [...Buffer.from(text)],
    top: top.map(([t, l]) => ({ token: t, logprob: l, bytes: [...Buffer.from(t)] })),
  });

  it("logprobs in both shapes: the per-token list and the flat summary", () => {
    expect(
      toWireLogprobs([
        token("Hi", -0.5, [
          ["Hi", -0.5],
          ["Yo", -1],
        ]),
        token("!", -0.25),
      ]),
    ).toEqual({
      content: [
        {
          token: "Hi",
          logprob: -0.5,
          bytes: [72, 105],
          top_logprobs: [
            { token: "Hi", logprob: -0.5, bytes: [72, 105] },
            { token: "Yo", logprob: -1, bytes: [89, 111] },
          ],
        },
        { token: "!", logprob: -0.25, bytes: [33], top_logprobs: [] },
      ],
      refusal: null,
      token: "Hi!",
      logprob: -0.75,
      bytes: [72, 105, 33],
      // The flat summary repeats the alternatives only for a single token.
      top_logprobs: [],
    });
    expect(toWireLogprobs([token("A", -0.1, [["A", -0.1]])]).top_logprobs).toEqual([{ token: "A", logprob: -0.1, bytes: [65] }]);
    expect(toWireLogprobs([])).toMatchObject({ content: [], token: "", logprob: 0, bytes: [], top_logprobs: [] });
  });

  const choice = (fields: Partial<ChatChoiceResult>): ChatChoiceResult => ({
    index: 0,
    content: "",
    reasoning: null,
    toolCalls: [],
    finishReason: "stop",
    completionTokens: 1,
    reasoningTokens: 0,
    logprobs: null,
    ...fields,
  });

  it("a text answer, with its reasoning unless stripped", () => {
    const answered = choice({ index: 1, content: "4", reasoning: "2+2", finishReason: "length" });
    expect(toChoice(answered, { stripReasoning: false })).toEqual({
      index: 1,
      finish_reason: "length",
      stop_reason: "length",
      logprobs: null,
      message: { role: "assistant", content: "4", reasoning_content: "2+2", tool_calls: null },
    });
    expect(toChoice(answered, { stripReasoning: true }).message.reasoning_content).toBeNull();
  });

  it("tool calls: content null when there is no text, function calls in the standard's shape", () => {
    const called = choice({ toolCalls: [{ id: "call_1", name: "add", arguments: '{"a":1}' }], finishReason: "tool_calls" });
    expect(toChoice(called, { stripReasoning: false })).toEqual({
      index: 0,
      finish_reason: "tool_calls",
      stop_reason: "stop",
      logprobs: null,
      message: { role: "assistant", content: null, reasoning_content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "add", arguments: '{"a":1}' } }] },
    });
    // Text next to the calls is kept; an empty answer without calls is "", not null.
    expect(toChoice({ ...called, content: "Let me add." }, { stripReasoning: false }).message.content).toBe("Let me add.");
    expect(toChoice(choice({}), { stripReasoning: false }).message.content).toBe("");
  });

  it("a choice's logprobs are translated when the engine reported them", () => {
    expect(toChoice(choice({ content: "A", logprobs: [token("A", -0.1)] }), { stripReasoning: false }).logprobs).toMatchObject({ token: "A", logprob: -0.1 });
  });

  it.each([
    [{ kind: "content", text: "Hel" }, { logprobs: false }, { index: 2, finish_reason: null, logprobs: null, delta: { content: "Hel" } }],
    [{ kind: "content", text: "Hel" }, { logprobs: true }, { index: 2, finish_reason: null, logprobs: { content: [], token: "", logprob: 0 }, delta: { content: "Hel" } }],
    [{ kind: "reasoning", text: "hmm" }, {}, { index: 2, finish_reason: null, logprobs: null, delta: { reasoning_content: "hmm" } }],
    [
      { kind: "toolCallStart", index: 0, id: "call_1", name: "add" },
      {},
      { index: 2, finish_reason: null, logprobs: null, delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "add", arguments: "" } }] } },
    ],
    [
      { kind: "toolCallArguments", index: 0, text: '{"a"' },
      {},
      { index: 2, finish_reason: null, logprobs: null, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] } },
    ],
  ] as const)("chunk for %o (%o)", (delta, options, expected) => {
    const chunk = toChunkChoice(2, delta, { stripReasoning: false, logprobs: false, ...options });
    expect(chunk).toMatchObject(expected);
    if (expected.logprobs === null) expect(chunk?.logprobs).toBeNull();
  });

  it("a stripped thought sends no chunk", () => {
    expect(toChunkChoice(0, { kind: "reasoning", text: "hmm" }, { stripReasoning: true, logprobs: false })).toBeNull();
    expect(toChunkChoice(0, { kind: "content", text: "ok" }, { stripReasoning: true, logprobs: false })).toMatchObject({ delta: { content: "ok" } });
  });
});
