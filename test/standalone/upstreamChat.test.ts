import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelEntry, ModelsConfig } from "../../src/config/modelRegistry.js";
import { CheckedModelsConfig } from "../../src/models/loadModelsConfig.js";
import { ModelManager } from "../../src/models/ModelManager.js";
import type { ApiError } from "../../src/errors.js";
import { toJsonSchemaSubset } from "../../src/engines/jsonSchemaSubset.js";
import { PlanRefusalError } from "../../src/engines/PlanRefusal.js";
import type { ChatDelta, ChatGenerateOptions } from "../../src/engines/types.js";
import { UpstreamChatEngine } from "../../src/engines/upstream/UpstreamChatEngine.js";

/**
 * The upstream engine against a real HTTP peer on loopback that answers the way other servers of
 * the standard do (vLLM's field names and error shape, CRLF framing, events split across writes),
 * which the two-Hearth e2e test cannot show. The peer plays back a script per test.
 */
let peer: Server;
let baseUrl: string;
let script: (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>) => void;
const received: Record<string, unknown>[] = [];
/** GET /v1/models calls the peer answered (a relayed model's features must never come from there). */
let modelListCalls = 0;

beforeAll(async () => {
  peer = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => (text += c.toString("utf8")));
    req.on("end", () => {
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      if (req.url === "/v1/models") {
        modelListCalls++;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ object: "list", data: [{ id: "org/big-model", max_model_len: 32768 }] }));
        return;
      }
      received.push(body);
      script(req, res, body);
    });
  });
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/v1`;
});
afterAll(() => {
  peer.closeAllConnections();
  peer.close();
});

const engine = (upstream: Record<string, unknown> = {}) =>
  UpstreamChatEngine.load(ModelEntry.parse({ id: "big", type: "text", backend: "upstream", upstream: { baseUrl, apiKey: "sk-node", model: "org/big-model", ...upstream } }));

const options = (extra: Partial<ChatGenerateOptions> = {}): ChatGenerateOptions => ({
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Weather in Paris?" },
  ],
  sampling: { temperature: 0.3, topP: 0.9 },
  ...extra,
});

const sse = (res: ServerResponse, events: unknown[], lineEnd = "\r\n") => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const text = events.map((e) => `data: ${typeof e === "string" ? e : JSON.stringify(e)}${lineEnd}${lineEnd}`).join("");
  // Split at odd places, as TCP may: events must be reassembled.
  const cuts = [0, 7, 61, 62, 140, text.length];
  for (let i = 0; i + 1 < cuts.length; i++) res.write(text.slice(cuts[i], cuts[i + 1]));
  res.end();
};

describe("UpstreamChatEngine against a server of the standard", () => {
  it("forwards the request as the standard spells it and reads a vLLM-style stream (reasoning, tool call, usage)", async () => {
    script = (_req, res) =>
      sse(res, [
        { choices: [{ index: 0, delta: { role: "assistant", reasoning: "Look " } }] },
        { choices: [{ index: 0, delta: { reasoning: "it up." } }] },
        { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: "chatcmpl-tool-1", type: "function", function: { name: "get_weather", arguments: "" } }] } }] },
        { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] } }] },
        { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }, finish_reason: "tool_calls" }] },
        { choices: [], usage: { prompt_tokens: 17, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 3 } } },
        "[DONE]",
      ]);
    const chat = await engine({ features: { reasoning: true } });
    expect(chat.contextSize).toBe(32768);
    const deltas: ChatDelta[] = [];
    let started = false;
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const sentBefore = received.length;
    const plan = chat.plan(
      options({
        maxTokens: 100,
        stop: ["END"],
        tools: { functions: [{ name: "get_weather", parametersSchema: schema, parameters: toJsonSchemaSubset(schema) }], choice: "required", parallel: false },
        reasoning: { mode: "on", budgetShare: 1 / 4, effort: "low" },
      }),
    );
    // Planning sends nothing: the caller reserves what the plan says first.
    expect(received).toHaveLength(sentBefore);
    const result = await plan.generate({ onStart: () => (started = true), onDelta: (_i, d) => deltas.push(d) });
    const body = received.at(-1)!;
    expect(body).toMatchObject({
      model: "org/big-model",
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.3,
      top_p: 0.9,
      max_tokens: 100,
      stop: ["END"],
      tool_choice: "required",
      parallel_tool_calls: false,
      reasoning_effort: "low",
      tools: [{ type: "function", function: { name: "get_weather", parameters: schema } }],
    });
    expect(body).not.toHaveProperty("top_k");
    expect(body).not.toHaveProperty("n");
    expect(started).toBe(true);
    expect(plan.maxTokens).toBe(100);
    expect(plan.promptTokens).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(body.messages)));
    expect(deltas).toEqual([
      { kind: "reasoning", text: "Look " },
      { kind: "reasoning", text: "it up." },
      { kind: "toolCallStart", index: 0, id: "chatcmpl-tool-1", name: "get_weather" },
      { kind: "toolCallArguments", index: 0, text: '{"city":' },
      { kind: "toolCallArguments", index: 0, text: '"Paris"}' },
    ]);
    expect(result).toMatchObject({ finishReason: "tool_calls", promptTokens: 17, completionTokens: 9, cachedTokens: 4, cacheWriteTokens: 13, reasoningTokens: 3 });
    expect(result.choices[0]).toMatchObject({ reasoning: "Look it up.", content: "", toolCalls: [{ id: "chatcmpl-tool-1", name: "get_weather", arguments: '{"city":"Paris"}' }] });
  });

  it("forwards the caller's JSON schema as written, and estimates usage when the upstream reports none", async () => {
    script = (_req, res) =>
      sse(res, [{ choices: [{ index: 0, delta: { content: '{"a"' } }] }, { choices: [{ index: 0, delta: { content: ":1}" }, finish_reason: "stop" }] }, "[DONE]"], "\n");
    const chat = await engine({ contextSize: 1000 });
    const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };
    const plan = chat.plan(
      options({
        choices: 1,
        responseFormat: { type: "json_schema", schema: toJsonSchemaSubset(schema), source: { name: "thing", strict: true, schema } },
      }),
    );
    const result = await plan.generate({});
    // Without max_tokens the hold covers the whole context.
    expect(plan.maxTokens).toBe(1000);
    expect(received.at(-1)!.response_format).toEqual({ type: "json_schema", json_schema: { name: "thing", strict: true, schema } });
    expect(result.choices[0]!.content).toBe('{"a":1}');
    expect(result.completionTokens).toBe(2);
    expect(result.promptTokens).toBeGreaterThan(0);
    expect(result.promptTokens).toBeLessThan(plan.promptTokens);
  });

  it("maps the standard's error shape: a 400 names its param, 429 is capacity, 401 is the node's problem", async () => {
    const chat = await engine();
    const answer = (status: number, body: unknown) => (script = (_req, res) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body)));
    answer(400, { object: "error", message: "temperature must be at most 2", type: "BadRequestError", param: "temperature", code: 400 });
    let error = (await chat
      .plan(options())
      .generate({})
      .catch((e: unknown) => e)) as ApiError;
    expect(error.status).toBe(400);
    expect(error.message).toBe("Upstream: temperature must be at most 2");
    expect(error.extra.details).toMatchObject({ temperature: { _errors: ["temperature must be at most 2"] } });
    answer(400, { error: { message: "bad tool", type: "invalid_request_error", param: "tools.0.function", code: null } });
    error = (await chat
      .plan(options())
      .generate({})
      .catch((e: unknown) => e)) as ApiError;
    expect(error.status).toBe(400);
    expect(error.extra.details).toMatchObject({ tools: { 0: { function: { _errors: ["bad tool"] } } } });
    answer(429, { error: { message: "slow down" } });
    expect(
      (
        (await chat
          .plan(options())
          .generate({})
          .catch((e: unknown) => e)) as ApiError
      ).status,
    ).toBe(503);
    answer(401, { detail: "bad key" });
    error = (await chat
      .plan(options())
      .generate({})
      .catch((e: unknown) => e)) as ApiError;
    expect(error.status).toBe(502);
    expect(error.message).toMatch(/refused this node \(401: bad key\)/);
  });

  it("a stream that stops before the answer is complete is a 502, an error event mid-stream too", async () => {
    const chat = await engine();
    script = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "Hel" } }] })}\n\n`);
      setTimeout(() => res.destroy(), 50);
    };
    const cut = (await chat
      .plan(options())
      .generate({})
      .catch((e: unknown) => e)) as ApiError;
    expect(cut.status).toBe(502);
    expect(cut.message).toMatch(/failed mid-stream/);
    script = (_req, res) => sse(res, [{ choices: [{ index: 0, delta: { content: "Hel" } }] }, { error: { message: "engine died", code: 500 } }]);
    const failed = (await chat
      .plan(options())
      .generate({})
      .catch((e: unknown) => e)) as ApiError;
    expect(failed.status).toBe(502);
    expect(failed.message).toMatch(/engine died/);
    script = (_req, res) => sse(res, [{ choices: [{ index: 0, delta: { content: "Hel" } }] }]);
    const ended = (await chat
      .plan(options())
      .generate({})
      .catch((e: unknown) => e)) as ApiError;
    expect(ended.status).toBe(502);
    expect(ended.message).toMatch(/ended the stream before the answer was complete/);
  });

  it("plans a completion without sending it, and refuses in its own terms an echo it cannot relay", async () => {
    const chat = await engine({ contextSize: 1000 });
    const sentBefore = received.length;
    const options = { prompts: ["Once", "Twice"], choices: 2, maxTokens: 50, sampling: { temperature: 0.3, topP: 0.9 } };
    const plan = chat.planCompletion(options);
    expect(plan).toMatchObject({ choices: 4, maxTokens: 200 });
    expect(plan.promptTokens).toBeGreaterThanOrEqual("OnceTwice".length);
    const refusal = (() => {
      try {
        chat.planCompletion({ ...options, echo: true, logprobs: { top: 1 } });
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(PlanRefusalError);
    expect((refusal as PlanRefusalError).refusal).toEqual({ kind: "echoUnavailable" });
    expect(received).toHaveLength(sentBefore);
  });

  it("stops the upstream request when the caller aborts, and reports what was streamed", async () => {
    const chat = await engine();
    let closed!: () => void;
    const upstreamClosed = new Promise<void>((resolve) => (closed = resolve));
    script = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "one" } }] })}\n\n`);
      res.on("close", () => closed());
    };
    const controller = new AbortController();
    const result = await chat.plan(options()).generate({ signal: controller.signal, onDelta: () => controller.abort() });
    expect(result.finishReason).toBe("abort");
    expect(result.completionTokens).toBe(1);
    expect(result.choices[0]!.content).toBe("one");
    await upstreamClosed;
    expect(chat.stats().busy).toBe(0);
  });
});

describe("upstream text models in the registry", () => {
  it("needs upstream settings, and each model's features come from its own configuration (never the upstream)", async () => {
    const missing = CheckedModelsConfig.safeParse({ models: [{ id: "x", type: "text", backend: "upstream" }] });
    expect(missing.error?.issues.map((i) => i.path.join("."))).toEqual(["models.0.upstream"]);
    const unknownFeature = CheckedModelsConfig.safeParse({ models: [{ id: "x", type: "text", backend: "upstream", upstream: { baseUrl, features: { telepathy: true } } }] });
    expect(unknownFeature.success).toBe(false);

    const relayed = (id: string, features: Record<string, unknown>) => ({ id, type: "text", backend: "upstream", upstream: { baseUrl, features } });
    const manager = new ModelManager(ModelsConfig.parse({ models: [relayed("a", { functionCalling: false }), relayed("b", { reasoning: true, reasoningToggle: true })] }), {
      gpu: false,
    });
    const callsBefore = modelListCalls;
    expect(await manager.chatFeatures("a")).toMatchObject({ functionCalling: false, reasoning: false });
    expect(await manager.chatFeatures("b")).toMatchObject({ functionCalling: true, reasoning: true, reasoningToggle: true });
    expect(modelListCalls).toBe(callsBefore);
  });
});
