import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadModelsConfig } from "../../src/models/loadModelsConfig.js";
import { getBalances } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { engineOf, post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { countReservations } from "../../src/store/reservations.js";

/**
 * Two real Hearth nodes: the upstream serves tiny-chat on its own llama.cpp; the front relays
 * its text models to the upstream over the chat-completions standard and keeps its own keys,
 * limits and credits. The front's config is read from a models.config.json file so the
 * upstream key comes from an environment variable, as in production.
 */
let upstream: TestServer;
/** Holds the front's models.config.json. */
let dir: string | undefined;
let front: TestServer;
let upstreamAccount: string;
/** An HTTP server that accepts requests and never answers (for the timeout). */
let silent: Server;
let deadPort: number;

const KEY_VARIABLE = "HEARTH_TEST_UPSTREAM_KEY";
const PRICED = { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } };
const micros = (usd: number) => Math.round(usd * 1_000_000);
const user = (content: string) => [{ role: "user" as const, content }];

const weatherTool: OpenAI.ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 10 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
};

beforeAll(async () => {
  silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/api/v1`;
  // A port that was just free and is closed again: connecting is refused.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  deadPort = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));

  upstream = await startTestServer({ models: [tinyChatEntry({ pricing: { input: { usd: 3, diem: 3 }, output: { usd: 5, diem: 5 } } })] });
  const nodeKey = upstream.createKey({ usd: 10 });
  upstreamAccount = nodeKey.accountId;

  dir = mkdtempSync(join(tmpdir(), "hearth-upstream-chat-"));
  const configPath = join(dir, "models.config.json");
  const relayed = (id: string, settings: Record<string, unknown>) => ({ id, type: "text", backend: "upstream", pricing: PRICED, upstream: settings });
  writeFileSync(
    configPath,
    JSON.stringify({
      models: [
        relayed("relay-chat", { baseUrl: upstream.baseUrl, apiKeyEnv: KEY_VARIABLE, model: "tiny-chat" }),
        // The key's variable is not set: the upstream (a Hearth) answers a keyless call with 402.
        relayed("relay-nokey", { baseUrl: upstream.baseUrl, apiKeyEnv: "HEARTH_TEST_UNSET_KEY", model: "tiny-chat", contextSize: 2048 }),
        // Nothing listens there.
        relayed("relay-dead", { baseUrl: `http://127.0.0.1:${deadPort}/api/v1`, contextSize: 4096 }),
        relayed("relay-silent", { baseUrl: silentUrl, timeoutMs: 300, contextSize: 4096 }),
      ],
    }),
  );
  const models = loadModelsConfig(configPath, dir, { [KEY_VARIABLE]: nodeKey.key }).models;
  expect(models[0]!.upstream!.apiKey).toBe(nodeKey.key);
  front = await startTestServer({ models });
});
afterAll(async () => {
  await front?.stop();
  await upstream?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  silent?.closeAllConnections();
  silent?.close();
});

describe("chat relayed to an upstream server of the chat-completions standard", () => {
  it("answers through the openai client with the upstream's text, usage and a cost that matches it", async () => {
    const { key, accountId } = front.createKey({ usd: 1 });
    const request = { messages: user("Tell me a story"), max_tokens: 24, temperature: 0, seed: 5 };
    const { data: completion, response } = await front
      .openai(key)
      .chat.completions.create({ model: "relay-chat", ...request })
      .withResponse();
    expect(response.headers.get("x-service-model-router")).toMatch(/^upstream 127\.0\.0\.1:\d+$/);
    expect(completion.model).toBe("relay-chat");
    // Greedy decoding on the same model gives the upstream's own answer, token for token.
    const direct = await upstream.openai().chat.completions.create({ model: "tiny-chat", ...request });
    expect(completion.choices[0]!.message.content).toBe(direct.choices[0]!.message.content);
    expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(completion.choices[0]!.finish_reason).toBe(direct.choices[0]!.finish_reason);
    expect(completion.usage!.prompt_tokens).toBe(direct.usage!.prompt_tokens);
    expect(completion.usage!.completion_tokens).toBe(direct.usage!.completion_tokens);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);

    // $1 / $2 per million: one micro-dollar per prompt token, two per completion token, on the front's ledger.
    const cost = (completion as unknown as { cost: { usd: number; diem: number } }).cost;
    const expected = completion.usage!.prompt_tokens + 2 * completion.usage!.completion_tokens;
    expect(micros(cost.usd)).toBe(expected);
    expect(cost.diem).toBe(0);
    expect(1_000_000 - getBalances(front.db, accountId).USD).toBe(expected);
    const [row] = listUsage(front.db, accountId);
    expect(row).toMatchObject({ model: "relay-chat", status: 200, promptTokens: completion.usage!.prompt_tokens, completionTokens: completion.usage!.completion_tokens });
    expect(countReservations(front.db)).toBe(0);
  });

  it("relays logit_bias: the upstream applies it, as when asked directly", async () => {
    const request = { messages: user("Tell me a story"), max_tokens: 5, temperature: 0, logit_bias: { 300: 100 } };
    const direct = await upstream.openai().chat.completions.create({ model: "tiny-chat", ...request });
    const plain = await upstream.openai().chat.completions.create({ model: "tiny-chat", ...request, logit_bias: undefined });
    expect(direct.choices[0]!.message.content).not.toBe(plain.choices[0]!.message.content);
    const relayed = await front.openai().chat.completions.create({ model: "relay-chat", ...request });
    expect(relayed.choices[0]!.message.content).toBe(direct.choices[0]!.message.content);
  });

  it("streams token by token, with the same text as the non-streaming answer, and the usage and cost at the end", async () => {
    const { key, accountId } = front.createKey({ usd: 1 });
    const request = { model: "relay-chat", messages: user("Once upon a time"), max_tokens: 40, temperature: 0, seed: 9 };
    const whole = await front.openai(key).chat.completions.create(request);
    const spent = 1_000_000 - getBalances(front.db, accountId).USD;

    const stream = await front.openai(key).chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    let text = "";
    const arrivals: number[] = [];
    let last: (OpenAI.ChatCompletionChunk & { cost?: { usd: number } }) | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.content;
      if (piece) {
        text += piece;
        arrivals.push(performance.now());
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      last = chunk;
    }
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe(whole.choices[0]!.finish_reason);
    // One chunk per generated token, arriving over time rather than in one burst at the end.
    expect(arrivals.length).toBe(whole.usage!.completion_tokens);
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThan(5);
    expect(last!.usage).toMatchObject({ prompt_tokens: whole.usage!.prompt_tokens, completion_tokens: whole.usage!.completion_tokens });
    expect(micros(last!.cost!.usd)).toBe(whole.usage!.prompt_tokens + 2 * whole.usage!.completion_tokens);
    expect(1_000_000 - getBalances(front.db, accountId).USD - spent).toBe(micros(last!.cost!.usd));
  });

  it("bills the caller on the front and the front's key on the upstream, each at its own price", async () => {
    const { key, accountId } = front.createKey({ usd: 1 });
    const before = getBalances(upstream.db, upstreamAccount).USD;
    const completion = await front.openai(key).chat.completions.create({ model: "relay-chat", messages: user("Hi"), max_tokens: 8, temperature: 0 });
    const { prompt_tokens: p, completion_tokens: c } = completion.usage!;
    expect(1_000_000 - getBalances(front.db, accountId).USD).toBe(p + 2 * c);
    expect(before - getBalances(upstream.db, upstreamAccount).USD).toBe(3 * p + 5 * c);
  });

  it("forwards tools: tool_choice required gives a call, and the tool's result goes back through the upstream", async () => {
    const client = front.openai();
    const completion = await client.chat.completions.create({
      model: "relay-chat",
      messages: user("What is the weather in Paris?"),
      tools: [weatherTool],
      tool_choice: "required",
      max_tokens: 200,
      temperature: 0.7,
      seed: 11,
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    const call = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe("get_weather");
    const args = JSON.parse(call.function.arguments) as { city: string; unit: string };
    expect(["celsius", "fahrenheit"]).toContain(args.unit);
    expect(call.id.length).toBeGreaterThan(0);

    // Streamed, the call arrives as a start (id, name) and argument pieces that join to valid JSON.
    const stream = await client.chat.completions.create({
      model: "relay-chat",
      messages: user("What is the weather in Paris?"),
      tools: [weatherTool],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      max_tokens: 200,
      temperature: 0.7,
      seed: 11,
      stream: true,
    });
    let name = "";
    let streamedArgs = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += delta.function?.name ?? "";
        streamedArgs += delta.function?.arguments ?? "";
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe("get_weather");
    expect(finish).toBe("tool_calls");
    expect(JSON.parse(streamedArgs)).toHaveProperty("unit");

    const followUp = {
      messages: [
        ...user("What is the weather in Paris?"),
        { role: "assistant" as const, content: null, tool_calls: [call] },
        { role: "tool" as const, tool_call_id: call.id, content: JSON.stringify({ temperature: 21, sky: "clear" }) },
      ],
      tools: [weatherTool],
      max_tokens: 16,
      temperature: 0,
    };
    const answer = await client.chat.completions.create({ model: "relay-chat", ...followUp });
    expect(answer.choices[0]!.message.role).toBe("assistant");
    expect(answer.usage!.prompt_tokens).toBeGreaterThan(completion.usage!.prompt_tokens);
    // The tool call and its result reached the upstream as they were: the same prompt as asking it directly.
    const direct = await upstream.openai().chat.completions.create({ model: "tiny-chat", ...followUp });
    expect(answer.usage!.prompt_tokens).toBe(direct.usage!.prompt_tokens);
  });

  it("forwards n, logprobs and response_format", async () => {
    const client = front.openai();
    const two = await client.chat.completions.create({
      model: "relay-chat",
      messages: user("Pick"),
      max_tokens: 6,
      temperature: 1,
      seed: 3,
      n: 2,
      logprobs: true,
      top_logprobs: 2,
    });
    expect(two.choices.map((c) => c.index)).toEqual([0, 1]);
    for (const choice of two.choices) {
      const content = choice.logprobs!.content!;
      expect(content.length).toBeGreaterThan(0);
      expect(content.map((t) => t.token).join("")).toBe(choice.message.content);
      expect(content[0]!.top_logprobs).toHaveLength(2);
      expect(content[0]!.logprob).toBeLessThanOrEqual(0);
    }
    const json = await client.chat.completions.create({
      model: "relay-chat",
      messages: user("A colour"),
      max_tokens: 60,
      temperature: 0.5,
      seed: 2,
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "colour",
          schema: { type: "object", properties: { colour: { type: "string", enum: ["red", "blue"] } }, required: ["colour"], additionalProperties: false },
        },
      },
    });
    expect(["red", "blue"]).toContain((JSON.parse(json.choices[0]!.message.content!) as { colour: string }).colour);
  });

  it("passes the upstream's 400 on in Hearth's error shape", async () => {
    // The front allows 8 choices by default; the upstream's model has 4 sequences.
    const { key } = front.createKey({ usd: 1 });
    const res = await post(front, "/chat/completions", { model: "relay-chat", messages: user("Hi"), n: 5, max_tokens: 2 }, { key });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; details: { n?: { _errors: string[] } } };
    expect(body.error).toMatch(/^Upstream: .*at most 4 choices/);
    expect(body.details.n?._errors.length).toBeGreaterThan(0);
  });

  it("stops the upstream's generation when the client disconnects", async () => {
    const { key, accountId } = front.createKey({ usd: 1 });
    const res = await post(front, "/chat/completions", { model: "relay-chat", messages: user("go"), max_tokens: 1800, temperature: 0, stream: true }, { key });
    const reader = res.body!.getReader();
    for (let i = 0; i < 4; i++) await reader.read();
    const upstreamRowsBefore = listUsage(upstream.db, upstreamAccount).length;
    await reader.cancel();
    let front499 = listUsage(front.db, accountId);
    let upstreamRows = listUsage(upstream.db, upstreamAccount);
    for (let i = 0; i < 500 && (front499.length === 0 || upstreamRows.length === upstreamRowsBefore); i++) {
      await new Promise((r) => setTimeout(r, 20));
      front499 = listUsage(front.db, accountId);
      upstreamRows = listUsage(upstream.db, upstreamAccount);
    }
    expect(front499[0]).toMatchObject({ status: 499, finishReason: "abort" });
    expect(front499[0]!.completionTokens).toBeGreaterThan(0);
    // The upstream saw its own client (the front) go away long before 1800 tokens.
    const relayedRow = upstreamRows.at(-1)!;
    expect(relayedRow).toMatchObject({ status: 499, finishReason: "abort" });
    expect(relayedRow.completionTokens).toBeLessThan(1800);
    // The caller pays for the tokens it was sent (counted one per streamed piece) and the estimated prompt.
    expect(1_000_000 - getBalances(front.db, accountId).USD).toBe(front499[0]!.promptTokens + 2 * front499[0]!.completionTokens);
    expect(countReservations(front.db)).toBe(0);
    expect(front.models.statusOf("relay-chat")).toMatchObject({ state: "loaded", queue: { busy: 0 } });
  });

  it("503 naming the upstream when it cannot be reached, 504 when it does not answer, 502 when it refuses the node", async () => {
    const { key, accountId } = front.createKey({ usd: 1 });
    const dead = await front
      .openai(key)
      .chat.completions.create({ model: "relay-dead", messages: user("Hi"), max_tokens: 4 })
      .catch((e: unknown) => e);
    expect(dead).toBeInstanceOf(OpenAI.APIError);
    expect((dead as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((dead as InstanceType<typeof OpenAI.APIError>).message).toContain(`upstream chat server at 127.0.0.1:${deadPort} could not be reached: ECONNREFUSED`);

    const streamed = await post(front, "/chat/completions", { model: "relay-dead", messages: user("Hi"), max_tokens: 4, stream: true }, { key });
    expect(streamed.status).toBe(503);
    expect(((await streamed.json()) as { error: string }).error).toContain(`127.0.0.1:${deadPort}`);

    const started = performance.now();
    const slow = await post(front, "/chat/completions", { model: "relay-silent", messages: user("Hi"), max_tokens: 4 }, { key });
    expect(slow.status).toBe(504);
    expect(((await slow.json()) as { error: string }).error).toMatch(/did not answer within 300 ms/);
    expect(performance.now() - started).toBeLessThan(5000);

    const refused = await post(front, "/chat/completions", { model: "relay-nokey", messages: user("Hi"), max_tokens: 4 }, { key });
    expect(refused.status).toBe(502);
    expect(((await refused.json()) as { error: string }).error).toMatch(/refused this node \(402: Payment required/);

    // Nothing was charged for any of them, and no hold is left.
    expect(getBalances(front.db, accountId).USD).toBe(1_000_000);
    expect(countReservations(front.db)).toBe(0);
  });

  it("GET /models lists the relayed models with their configured capabilities and the upstream's context window", async () => {
    await engineOf(front, "relay-chat", "chat");
    const list = (await (await fetch(`${front.baseUrl}/models?type=text`)).json()) as {
      data: { id: string; type: string; context_length: number; model_spec: { capabilities: Record<string, unknown>; modelSource: string } }[];
    };
    expect(list.data.map((m) => m.id)).toEqual(["relay-chat", "relay-nokey", "relay-dead", "relay-silent"]);
    const relay = list.data[0]!;
    expect(relay.type).toBe("text");
    expect(relay.model_spec.capabilities).toMatchObject({ supportsFunctionCalling: true, supportsResponseSchema: true, supportsLogProbs: true, supportsReasoning: false });
    // Learned from the upstream's own listing when the engine loaded (the tiny model runs with 2048).
    expect(relay.context_length).toBe(2048);
    expect(list.data[2]!.context_length).toBe(4096);
  });
});
