import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/** $1 per million input tokens, $2 per million output tokens. */
const PRICED = { pricing: { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } } };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ models: [tinyChatEntry(PRICED)], config: { metricsPort: 0 } });
});
afterAll(() => server.stop());

/** Prometheus text -> the value of every series, keyed by name and label set as exposed. */
function parseExposition(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const series: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    series.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return series;
}

async function scrape(key = server.adminKey) {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  const series = parseExposition(await res.text());
  /** The value of the series with this name whose labels include `labels`; undefined when absent. */
  const value = (name: string, labels: Record<string, string> = {}) => {
    const found = series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} series`);
    return found[0]?.value;
  };
  return { series, value, get: (name: string, labels: Record<string, string> = {}) => value(name, labels) ?? 0 };
}

const ask = (extra: Record<string, unknown> = {}) => ({
  model: "tiny-chat",
  messages: [{ role: "user" as const, content: "Tell me a story" }],
  max_tokens: 12,
  temperature: 0,
  ...extra,
});

describe("GET /metrics", () => {
  it("answers 401 without a key, 403 for an inference key and the exposition text for an admin key", async () => {
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    const inference = server.createKey({ usd: 1 }).key;
    const refused = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${inference}` } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toMatch(/admin/);
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.adminKey}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain("# TYPE hearth_http_requests_total counter");
    expect(text).toContain("# TYPE hearth_chat_time_to_first_token_seconds histogram");
    // prom-client's default process metrics.
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
  });

  it("is served without auth on --metrics-port, and nothing else is", async () => {
    expect(server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(server.metricsUrl).not.toContain(`:${new URL(server.url).port}/`);
    const res = await fetch(server.metricsUrl!);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("hearth_http_requests_total");
    expect((await fetch(server.metricsUrl!.replace(/\/metrics$/, "/api/v1/models"))).status).toBe(404);
  });

  it("times streaming and non-streaming chats, counts their tokens and what they were charged", async () => {
    const { key } = server.createKey({ usd: 5 });
    const client = server.openai(key);
    const before = await scrape();

    const completion = (await client.chat.completions.create(ask())) as unknown as { usage: { prompt_tokens: number; completion_tokens: number }; cost: { usd: number } };
    let streamUsage: { prompt_tokens: number; completion_tokens: number } | undefined;
    let streamCost: number | undefined;
    let pieces = 0;
    const stream = await client.chat.completions.create({
      ...(ask({ messages: [{ role: "user" as const, content: "Another story" }] }) as ReturnType<typeof ask>),
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) pieces++;
      if (chunk.usage) streamUsage = chunk.usage;
      const cost = (chunk as unknown as { cost?: { usd: number } }).cost;
      if (cost) streamCost = cost.usd;
    }
    expect(streamUsage).toBeDefined();
    expect(pieces).toBeGreaterThan(1);

    // Without a memory budget a model's estimate is made when asked for, as the admin listing does.
    await server.models.estimate();
    const after = await scrape();
    const model = { model: "tiny-chat" };
    const delta = (name: string, labels: Record<string, string> = model) => after.get(name, labels) - before.get(name, labels);

    for (const histogram of ["hearth_chat_time_to_first_token_seconds", "hearth_chat_queue_wait_seconds", "hearth_chat_tokens_per_second"]) {
      expect(delta(`${histogram}_count`), histogram).toBe(2);
      expect(delta(`${histogram}_bucket`, { ...model, le: "+Inf" }), histogram).toBe(2);
      expect(delta(`${histogram}_sum`), histogram).toBeGreaterThan(0);
    }
    // The streamed choice alone produced `pieces` pieces, so at least pieces - 1 gaps between them.
    const completionTokens = completion.usage.completion_tokens + streamUsage!.completion_tokens;
    expect(delta("hearth_chat_inter_token_latency_seconds_count")).toBeGreaterThanOrEqual(pieces - 1);
    expect(delta("hearth_chat_inter_token_latency_seconds_count")).toBeLessThanOrEqual(completionTokens);
    expect(delta("hearth_chat_inter_token_latency_seconds_bucket", { ...model, le: "+Inf" })).toBe(delta("hearth_chat_inter_token_latency_seconds_count"));
    expect(delta("hearth_chat_completion_tokens_total")).toBe(completionTokens);
    expect(delta("hearth_chat_prompt_tokens_total")).toBe(completion.usage.prompt_tokens + streamUsage!.prompt_tokens);

    const chatOk = { method: "POST", route: "/api/v1/chat/completions", status: "200" };
    expect(delta("hearth_http_requests_total", chatOk)).toBe(2);
    expect(delta("hearth_http_request_duration_seconds_count", chatOk)).toBe(2);

    const charged = completion.cost.usd + streamCost!;
    expect(charged).toBeGreaterThan(0);
    expect(delta("hearth_credits_charged_total", { currency: "USD" })).toBeCloseTo(charged, 9);

    // The chat model is loaded: its queue is reported (idle now).
    expect(after.value("hearth_model_queue_depth", { model: "tiny-chat", kind: "chat" })).toBe(0);
    expect(after.value("hearth_model_busy_slots", { model: "tiny-chat", kind: "chat" })).toBe(0);
    expect(after.value("hearth_models_loaded", { kind: "chat" })).toBe(1);
    // Its memory is the model manager's estimate (node-llama-cpp's, weights plus KV cache).
    const estimate = server.models.statusOf("tiny-chat").memory!;
    expect(estimate.ramBytes + estimate.vramBytes).toBeGreaterThan(0);
    expect(after.value("hearth_model_memory_bytes", { model: "tiny-chat", memory: "ram" })).toBe(estimate.ramBytes);
    expect(after.value("hearth_model_memory_bytes", { model: "tiny-chat", memory: "vram" })).toBe(estimate.vramBytes);
  });

  it("labels requests by route pattern, errors included, and unmatched URLs as one series", async () => {
    const before = await scrape();
    expect((await fetch(`${server.baseUrl}/characters/no-such-one`, { headers: { authorization: `Bearer ${server.adminKey}` } })).status).toBe(404);
    expect((await post(server, "/chat/completions", ask(), { key: "not-a-key" })).status).toBe(401);
    expect((await fetch(`${server.url}/no/such/path/42?secret=1`)).status).toBe(404);
    const after = await scrape();
    const delta = (labels: Record<string, string>) => after.get("hearth_http_requests_total", labels) - before.get("hearth_http_requests_total", labels);
    expect(delta({ method: "GET", route: "/api/v1/characters/:slug", status: "404" })).toBe(1);
    expect(delta({ method: "POST", route: "/api/v1/chat/completions", status: "401" })).toBe(1);
    expect(delta({ method: "GET", route: "unmatched", status: "404" })).toBe(1);
    expect(after.series.some((s) => s.labels.route?.includes("no-such") || s.labels.route?.includes("42"))).toBe(false);
  });

  it("counts rate-limit rejections by limit type", async () => {
    const account = createAccount(server.db, "limited");
    const key = createApiKey(server.db, { accountId: account.id, description: "limited", keyType: "INFERENCE", rateLimitOverrides: JSON.stringify({ "*": { rpm: 1 } }) }).secret;
    const before = await scrape();
    // The account has no credit: the first call is admitted by the limit and refused for payment.
    await server.withClockStopped(async () => {
      expect((await post(server, "/chat/completions", ask({ max_tokens: 1 }), { key })).status).toBe(402);
      expect((await post(server, "/chat/completions", ask({ max_tokens: 1 }), { key })).status).toBe(429);
    });
    const after = await scrape();
    const labels = { limit_type: "RPM" };
    expect(after.get("hearth_rate_limit_rejections_total", labels) - before.get("hearth_rate_limit_rejections_total", labels)).toBe(1);
    const refused = { method: "POST", route: "/api/v1/chat/completions", status: "429" };
    expect(after.get("hearth_http_requests_total", refused) - before.get("hearth_http_requests_total", refused)).toBe(1);
  });
});
