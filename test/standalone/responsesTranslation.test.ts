import express from "express";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromResponsesRequest, toResponsesPath } from "../../src/api/responses/fromResponsesRequest.js";
import { ResponseEvents } from "../../src/api/responses/responseEvents.js";
import { ResponseRequest } from "../../src/api/responses/schema.js";
import { responseSkeleton } from "../../src/api/responses/toResponse.js";
import type { ChatCompletionChunk } from "../../src/api/chat/schema.js";
import type { ChatGenerateResult } from "../../src/engines/types.js";
import { InvalidRequestError } from "../../src/errors.js";
import { SseStream } from "../../src/http/sse.js";

/** The Responses translations on their own: request items to chat messages, chat chunks to the standard's events. */

describe("fromResponsesRequest", () => {
  it("makes one assistant message of a turn's reasoning, message and function call items, instructions first", () => {
    const request = ResponseRequest.parse({
      model: "m",
      instructions: "Be brief.",
      input: [
        { role: "developer", content: "Use tools." },
        { role: "user", content: [{ type: "input_text", text: "Weather?" }] },
        { type: "reasoning", id: "rs_1", summary: [], content: [{ type: "reasoning_text", text: "I should call it." }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me look." }] },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
        { type: "function_call_output", call_id: "call_1", output: "21C" },
      ],
    });
    const { chat, inputItems, origins } = fromResponsesRequest(request, { context: [], searchAvailable: false });
    expect(chat.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "developer", content: "Use tools." },
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      {
        role: "assistant",
        content: "Let me look.",
        reasoning_content: "I should call it.",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "21C" },
    ]);
    expect(inputItems.map((item) => item.id)).toEqual([
      expect.stringMatching(/^msg_/),
      expect.stringMatching(/^msg_/),
      "rs_1",
      expect.stringMatching(/^msg_/),
      expect.stringMatching(/^fc_/),
      expect.stringMatching(/^fco_/),
    ]);
    expect(origins.map((o) => (o.field === "input" ? o.index : o.field))).toEqual(["instructions", 0, 1, 3, 5]);
  });

  it("maps the request's fields to chat's", () => {
    const request = ResponseRequest.parse({
      model: "m",
      input: "Hi",
      max_output_tokens: 9,
      tools: [{ type: "function", name: "f", parameters: { type: "object", properties: {} }, strict: true }],
      tool_choice: { type: "function", name: "f" },
      text: { format: { type: "json_schema", name: "x", schema: { type: "object" }, strict: true } },
      reasoning: { effort: "low" },
      include: ["message.output_text.logprobs"],
      top_logprobs: 3,
      venice_parameters: { disable_thinking: true },
    });
    const { chat } = fromResponsesRequest(request, { context: [], searchAvailable: false });
    expect(chat).toMatchObject({
      max_completion_tokens: 9,
      tools: [{ type: "function", function: { name: "f", strict: true } }],
      tool_choice: { type: "function", function: { name: "f" } },
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" }, strict: true } },
      reasoning: { effort: "low" },
      logprobs: true,
      top_logprobs: 3,
      service_parameters: { disable_thinking: true },
    });
  });

  it("names Responses fields for chat's field paths", () => {
    const origins = [{ field: "instructions" as const }, { field: "input" as const, index: 3 }];
    expect(toResponsesPath(["messages", "1", "content", "0", "type"], origins)).toEqual(["input", 3, "content", "0", "type"]);
    expect(toResponsesPath(["messages", "0"], origins)).toEqual(["instructions"]);
    expect(toResponsesPath(["response_format", "json_schema", "schema"], origins)).toEqual(["text", "format", "schema"]);
    expect(toResponsesPath(["tools", "2", "function", "parameters"], origins)).toEqual(["tools", "2", "parameters"]);
    expect(toResponsesPath(["tool_choice", "function", "name"], origins)).toEqual(["tool_choice", "name"]);
    expect(toResponsesPath(["max_completion_tokens"], origins)).toEqual(["max_output_tokens"]);
  });
});

const chunk = (delta: ChatCompletionChunk["choices"][number]["delta"]): ChatCompletionChunk => ({
  id: "c",
  object: "chat.completion.chunk",
  created: 0,
  model: "m",
  choices: [{ index: 0, delta, finish_reason: null, logprobs: null }],
});
const result = (finishReason: ChatGenerateResult["finishReason"]): ChatGenerateResult => ({
  choices: [],
  finishReason,
  promptTokens: 10,
  completionTokens: 5,
  reasoningTokens: 2,
  cachedTokens: 4,
  cacheWriteTokens: 6,
  queueMs: 0,
  timeToFirstTokenMs: 1,
});

describe("ResponseEvents", () => {
  const skeleton = () => responseSkeleton(ResponseRequest.parse({ model: "m", input: "Hi" }), { id: "resp_1", createdAt: 1, model: "m", store: true });

  it("opens and closes an item per kind, in the order the model writes them, with sequence numbers from 0", () => {
    const events = new ResponseEvents(skeleton(), { logprobs: false, summary: false });
    const all = [
      ...events.start(),
      ...events.fromChunk(chunk({ role: "assistant", content: "" })),
      ...events.fromChunk(chunk({ reasoning_content: "hm" })),
      ...events.fromChunk(chunk({ content: "Hi" })),
      ...events.fromChunk(chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "" } }] })),
      ...events.fromChunk(chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] })),
    ];
    const finished = events.finish(result("tool_calls"), { usd: 0.5, diem: 0 });
    all.push(...finished.events);
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => i));
    expect(all.map((e) => e.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.reasoning_text.delta",
      "response.reasoning_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(finished.response.output.map((item) => item.type)).toEqual(["reasoning", "message", "function_call"]);
    expect(finished.response).toMatchObject({
      status: "completed",
      output_text: "Hi",
      usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 4 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 15 },
      cost: { usd: 0.5, diem: 0 },
    });
  });

  it("ends a stream cut by the token limit with response.incomplete, and a failed one with response.failed", () => {
    const cut = new ResponseEvents(skeleton(), { logprobs: false, summary: false });
    cut.start();
    cut.fromChunk(chunk({ content: "Hi" }));
    const { events, response } = cut.finish(result("length"), { usd: 0, diem: 0 });
    expect(events.at(-1)!.type).toBe("response.incomplete");
    expect(response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [{ type: "message", status: "incomplete" }] });

    // A thought and nothing else still answers with an (empty) message, as the whole response does.
    const silent = new ResponseEvents(skeleton(), { logprobs: false, summary: false });
    silent.start();
    silent.fromChunk(chunk({ reasoning_content: "hm" }));
    expect(silent.finish(result("stop"), { usd: 0, diem: 0 }).response.output.map((item) => item.type)).toEqual(["reasoning", "message"]);

    const failing = new ResponseEvents(skeleton(), { logprobs: false, summary: false });
    failing.start();
    const failed = failing.failed(new InvalidRequestError("the model broke"));
    expect(failed).toMatchObject({ type: "response.failed", sequence_number: 2, response: { status: "failed", error: { message: "the model broke" } } });
  });
});

describe("SseStream with the Responses framing", () => {
  const app = express();
  app.get("/framed", (_req, res) => {
    const sse = new SseStream(res, { eventName: (e) => (e as { type: string }).type, done: false, errorEvent: () => ({ type: "response.failed" }) });
    sse.send({ type: "response.created" });
    sse.fail(new Error("boom"));
  });
  let base = "";
  let listener: ReturnType<typeof app.listen>;
  beforeAll(async () => {
    listener = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => listener.once("listening", resolve));
    base = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  });
  afterAll(() => listener.close());

  it("names each event, sends a failure as its own event, and ends without [DONE]", async () => {
    const text = await (await fetch(`${base}/framed`)).text();
    expect(text).toBe('event: response.created\ndata: {"type":"response.created"}\n\nevent: response.failed\ndata: {"type":"response.failed"}\n\n');
  });
});
