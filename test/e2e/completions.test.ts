import { join } from "node:path";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";
import { readGgufFileInfo } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { fixturesDir, post, startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";
import { countReservations } from "../../src/store/reservations.js";

/**
 * The legacy POST /completions on a real node: the tiny chat model and the tiny coder (the
 * same shape with FIM tokens), driven with the official openai client; credits checked in
 * the ledger; and a second node that relays its completions to the first over loopback.
 */

const PRICING = { input: { usd: 1, diem: 1 }, output: { usd: 2, diem: 2 } };
/** $1 and $2 per million tokens: one and two micro-dollars a token. */
const chargeOf = (usage: { prompt_tokens: number; completion_tokens: number }) => usage.prompt_tokens * 1 + usage.completion_tokens * 2;
const coderEntry = () => tinyChatEntry({ id: "tiny-coder", name: "Tiny Coder", file: join(fixturesDir(), "tiny-coder.gguf"), pricing: PRICING });

let server: TestServer;
let relay: TestServer;
let fim: { prefix: number; suffix: number; middle: number; vocabulary: readonly string[] };

beforeAll(async () => {
  server = await startTestServer({ models: [tinyChatEntry({ pricing: PRICING }), coderEntry()] });
  const nodeKey = server.createKey({ usd: 10 }).key;
  const relayed = (id: string, model: string) => ({
    id,
    type: "text",
    backend: "upstream",
    pricing: PRICING,
    upstream: { baseUrl: server.baseUrl, apiKey: nodeKey, model, contextSize: 2048 },
  });
  const { ModelEntry } = await import("../../src/config/modelRegistry.js");
  relay = await startTestServer({ models: [ModelEntry.parse(relayed("relay-chat", "tiny-chat")), ModelEntry.parse(relayed("relay-coder", "tiny-coder"))] });
  // The coder's FIM token ids, as llama.cpp reads them, straight from the GGUF.
  const info = await readGgufFileInfo(join(fixturesDir(), "tiny-coder.gguf"), { readTensorInfo: false });
  const metadata = info.metadata as unknown as { tokenizer: { ggml: Record<string, unknown> } };
  const ggml = metadata.tokenizer.ggml;
  fim = { prefix: ggml.fim_pre_token_id as number, suffix: ggml.fim_suf_token_id as number, middle: ggml.fim_mid_token_id as number, vocabulary: ggml.tokens as string[] };
});
afterAll(async () => {
  await relay?.stop();
  await server?.stop();
});

const greedy = { temperature: 0, seed: 7 } as const;

/**
 * The same alternatives with the same log probabilities, to float noise (a prompt evaluated in
 * other batches, or partly from the cache, differs in the last digits).
 */
function expectSameTopLogprobs(actual: (Record<string, number> | null)[] | undefined, expected: (Record<string, number> | null)[] | undefined) {
  expect(actual).toHaveLength(expected!.length);
  actual!.forEach((top, i) => {
    expect(Object.keys(top!).sort()).toEqual(Object.keys(expected![i]!).sort());
    for (const [token, logprob] of Object.entries(top!)) expect(logprob).toBeCloseTo(expected![i]![token]!, 5);
  });
}

/** Usage rows appear when the route's `finally` ran; wait for them after a disconnect. */
async function usageRows(accountId: string, count: number) {
  let rows = listUsage(server.db, accountId);
  for (let i = 0; i < 200 && rows.length < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    rows = listUsage(server.db, accountId);
  }
  return rows;
}

describe("POST /completions on the llama engine", () => {
  it("completes raw text (16 tokens by default), billed exactly what it reports, once, under /completions", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const before = getBalances(server.db, accountId).USD;
    const completion = await server.openai(key).completions.create({ model: "tiny-chat", prompt: "Once upon a time", ...greedy });
    expect(completion.object).toBe("text_completion");
    expect(completion.id).toMatch(/^cmpl-/);
    expect(completion.model).toBe("tiny-chat");
    const [choice] = completion.choices;
    expect(choice!.text.length).toBeGreaterThan(0);
    // Greedy decoding of the tiny model never ends on its own: the standard's default of 16 ends it.
    expect(choice!.finish_reason).toBe("length");
    expect(choice!.logprobs).toBeNull();
    const usage = completion.usage!;
    expect(usage.completion_tokens).toBe(16);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    const charged = before - getBalances(server.db, accountId).USD;
    expect(charged).toBe(chargeOf(usage));
    expect((completion as unknown as { cost: { usd: number } }).cost.usd).toBeCloseTo(charged / 1e6, 9);
    const rows = await usageRows(accountId, 1);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ endpoint: "/completions", model: "tiny-chat", status: 200, promptTokens: usage.prompt_tokens, completionTokens: 16 });
    expect(countReservations(server.db)).toBe(0);
  });

  it("gives the model the prompt as it is: no chat template tokens (echoed prompt tokens are the prompt)", async () => {
    const prompt = "The weather in the city";
    const completion = await server.openai().completions.create({ model: "tiny-chat", prompt, max_tokens: 0, echo: true, logprobs: 0, ...greedy });
    const [choice] = completion.choices;
    expect(choice!.text).toBe(prompt);
    const logprobs = choice!.logprobs!;
    expect(logprobs.tokens!.join("")).toBe(prompt);
    expect(completion.usage!.prompt_tokens).toBe(logprobs.tokens!.length);
    expect(completion.usage!.completion_tokens).toBe(0);
    // The first token has nothing before it; every other one has a log probability.
    expect(logprobs.token_logprobs![0]).toBeNull();
    for (const value of logprobs.token_logprobs!.slice(1)) expect(value).toBeLessThanOrEqual(0);
  });

  it("an empty prompt starts from the beginning-of-sequence token", async () => {
    const completion = await server.openai().completions.create({ model: "tiny-chat", prompt: "", max_tokens: 4, ...greedy });
    expect(completion.usage!.prompt_tokens).toBe(1);
    expect(completion.usage!.completion_tokens).toBe(4);
  });

  it("reuses a cached prompt, except where echo's log probabilities evaluate it afresh (billed as written, not cached)", async () => {
    const client = server.openai();
    const prompt = "The user asked the model to write a short summary of the document, and the assistant wrote it with care.";
    const first = await client.completions.create({ model: "tiny-chat", prompt, max_tokens: 2, ...greedy });
    const again = await client.completions.create({ model: "tiny-chat", prompt, max_tokens: 2, ...greedy });
    expect(again.usage!.prompt_tokens_details!.cached_tokens).toBe(first.usage!.prompt_tokens - 1);
    const scored = await client.completions.create({ model: "tiny-chat", prompt, max_tokens: 2, echo: true, logprobs: 1, ...greedy });
    expect(scored.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    expect(scored.choices[0]!.logprobs!.tokens).toHaveLength(first.usage!.prompt_tokens + 2);
  });

  it("streams chunks whose text is the greedy completion, with usage last when asked", async () => {
    const client = server.openai();
    const whole = await client.completions.create({ model: "tiny-chat", prompt: "Hello there", max_tokens: 24, ...greedy });
    const stream = await client.completions.create({ model: "tiny-chat", prompt: "Hello there", max_tokens: 24, stream: true, stream_options: { include_usage: true }, ...greedy });
    let text = "";
    let pieces = 0;
    let finish: string | null = null;
    let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("text_completion");
      for (const choice of chunk.choices) {
        text += choice.text;
        if (choice.text) pieces++;
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(pieces).toBeGreaterThan(1);
    expect(text).toBe(whole.choices[0]!.text);
    expect(finish).toBe("length");
    expect(usage).toMatchObject({ prompt_tokens: whole.usage!.prompt_tokens, completion_tokens: 24 });
  });

  it("logprobs: 2 gives the legacy shape, one entry per token, offsets into the text, the greedy token on top", async () => {
    const completion = await server.openai().completions.create({ model: "tiny-chat", prompt: "Tell me a story", max_tokens: 12, logprobs: 2, ...greedy });
    const { text, logprobs } = completion.choices[0]!;
    const { tokens, token_logprobs, top_logprobs, text_offset } = logprobs!;
    expect(tokens).toHaveLength(12);
    expect(token_logprobs).toHaveLength(12);
    expect(top_logprobs).toHaveLength(12);
    expect(text_offset).toHaveLength(12);
    expect(tokens!.join("")).toBe(text);
    tokens!.forEach((token, i) => {
      expect(text.slice(text_offset![i]!)).toMatch(new RegExp(`^${token.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
      const top = top_logprobs![i]!;
      expect(Object.keys(top).length).toBeLessThanOrEqual(2);
      // Greedy: the chosen token is the most likely one.
      expect(Math.max(...Object.values(top))).toBeCloseTo(token_logprobs![i]!, 4);
      expect(token_logprobs![i]!).toBeLessThanOrEqual(0);
    });
  });

  it("streams legacy logprobs per chunk, offsets continuing across chunks", async () => {
    const whole = await server.openai().completions.create({ model: "tiny-chat", prompt: "Tell me a story", max_tokens: 12, logprobs: 1, ...greedy });
    const stream = await server.openai().completions.create({ model: "tiny-chat", prompt: "Tell me a story", max_tokens: 12, logprobs: 1, stream: true, ...greedy });
    const tokens: string[] = [];
    const offsets: number[] = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        tokens.push(...(choice.logprobs?.tokens ?? []));
        offsets.push(...(choice.logprobs?.text_offset ?? []));
      }
    }
    expect(tokens).toEqual(whole.choices[0]!.logprobs!.tokens);
    expect(offsets).toEqual(whole.choices[0]!.logprobs!.text_offset);
  });

  it("streams an echoed prompt first, its tokens leading the log probabilities", async () => {
    const ask = { model: "tiny-chat", prompt: "Tell me a story", max_tokens: 6, logprobs: 1, echo: true, ...greedy } as const;
    const whole = (await server.openai().completions.create(ask)).choices[0]!;
    const chunks = [];
    for await (const chunk of await server.openai().completions.create({ ...ask, stream: true })) chunks.push(...chunk.choices);
    expect(chunks[0]!.text).toBe("Tell me a story");
    expect(chunks[0]!.logprobs!.token_logprobs![0]).toBeNull();
    expect(chunks.map((c) => c.text).join("")).toBe(whole.text);
    expect(chunks.flatMap((c) => c.logprobs?.tokens ?? [])).toEqual(whole.logprobs!.tokens);
    expect(chunks.flatMap((c) => c.logprobs?.text_offset ?? [])).toEqual(whole.logprobs!.text_offset);
  });

  it("n: 2 and an array of prompts: choice p * n + j is prompt p's j-th, billed for all", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const before = getBalances(server.db, accountId).USD;
    const prompts = ["The quick brown fox", "Hello there, how are you"];
    const completion = await server.openai(key).completions.create({ model: "tiny-chat", prompt: prompts, n: 2, max_tokens: 8, echo: true, temperature: 1, seed: 3 });
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    completion.choices.forEach((choice) => {
      expect(choice.text.startsWith(prompts[Math.floor(choice.index / 2)]!)).toBe(true);
    });
    // Choice j samples with seed + j: the two choices of one prompt differ.
    expect(completion.choices[0]!.text).not.toBe(completion.choices[1]!.text);
    expect(completion.usage!.completion_tokens).toBe(32);
    expect(before - getBalances(server.db, accountId).USD).toBe(chargeOf(completion.usage!));
  });

  it("stop ends the text before the stop string", async () => {
    const client = server.openai();
    const full = (await client.completions.create({ model: "tiny-chat", prompt: "Once upon a time", max_tokens: 16, ...greedy })).choices[0]!.text;
    const stop = full.slice(6, 8);
    const stopped = (await client.completions.create({ model: "tiny-chat", prompt: "Once upon a time", max_tokens: 16, stop: [stop], ...greedy })).choices[0]!;
    expect(stopped.text).toBe(full.slice(0, full.indexOf(stop)));
    expect(stopped.finish_reason).toBe("stop");
  });

  it("echo puts the prompt in front of the same completion", async () => {
    const client = server.openai();
    const plain = (await client.completions.create({ model: "tiny-chat", prompt: "Hello there", max_tokens: 10, ...greedy })).choices[0]!.text;
    const echoed = (await client.completions.create({ model: "tiny-chat", prompt: "Hello there", max_tokens: 10, echo: true, ...greedy })).choices[0]!.text;
    expect(echoed).toBe(`Hello there${plain}`);
  });

  it("takes token ids as the prompt (the same completion as the text), and refuses ids outside the vocabulary naming prompt", async () => {
    const client = server.openai();
    const echoed = await client.completions.create({ model: "tiny-coder", prompt: "x=(y+1)", max_tokens: 0, echo: true, logprobs: 0, ...greedy });
    const ids = echoed.choices[0]!.logprobs!.tokens!.map((token) => fim.vocabulary.indexOf(token));
    expect(ids.every((id) => id >= 0)).toBe(true);
    const fromText = await client.completions.create({ model: "tiny-coder", prompt: "x=(y+1)", max_tokens: 10, ...greedy });
    const fromIds = await client.completions.create({ model: "tiny-coder", prompt: ids, max_tokens: 10, logprobs: 3, ...greedy });
    expect(fromIds.choices[0]!.text).toBe(fromText.choices[0]!.text);
    const again = await client.completions.create({ model: "tiny-coder", prompt: "x=(y+1)", max_tokens: 10, logprobs: 3, ...greedy });
    expectSameTopLogprobs(fromIds.choices[0]!.logprobs!.top_logprobs, again.choices[0]!.logprobs!.top_logprobs);
    expect(fromIds.usage!.prompt_tokens).toBe(ids.length);

    const res = await post(server, "/completions", { model: "tiny-chat", prompt: [1, 2, 9_999_999] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; details: Record<string, any> };
    expect(body.details.prompt["2"]._errors[0]).toMatch(/outside this model's vocabulary/);
  });

  it("fills in the middle from the model's FIM tokens: the same as the prefix-suffix-middle layout sent as token ids", async () => {
    const client = server.openai();
    // Single-character tokens, so their ids are the vocabulary's entries for the characters.
    const prefix = "x=(";
    const suffix = ")+1";
    const ids = (text: string) => [...text].map((ch) => fim.vocabulary.indexOf(ch));
    const plain = await client.completions.create({ model: "tiny-coder", prompt: prefix, max_tokens: 0 });
    expect(plain.usage!.prompt_tokens).toBe(prefix.length);

    // Log probabilities tell contexts apart even where the random model's greedy text does not.
    const ask = { max_tokens: 12, logprobs: 5, ...greedy };
    const filled = await client.completions.create({ model: "tiny-coder", prompt: prefix, suffix, ...ask });
    expect(filled.usage!.prompt_tokens).toBe(prefix.length + suffix.length + 3);
    const layout = [fim.prefix, ...ids(prefix), fim.suffix, ...ids(suffix), fim.middle];
    const manual = await client.completions.create({ model: "tiny-coder", prompt: layout, ...ask });
    expect(filled.choices[0]!.text).toBe(manual.choices[0]!.text);
    expectSameTopLogprobs(filled.choices[0]!.logprobs!.top_logprobs, manual.choices[0]!.logprobs!.top_logprobs);
    // Another context (no suffix, or the parts in the other order) gives other probabilities.
    const unfilled = await client.completions.create({ model: "tiny-coder", prompt: prefix, ...ask });
    const swapped = await client.completions.create({ model: "tiny-coder", prompt: [fim.suffix, ...ids(suffix), fim.prefix, ...ids(prefix), fim.middle], ...ask });
    // An editor's own FIM layout spelled in a raw prompt reads the special tokens as such.
    const spelled = await client.completions.create({ model: "tiny-coder", prompt: `<|fim_prefix|>${prefix}<|fim_suffix|>${suffix}<|fim_middle|>`, ...ask });
    expect(spelled.usage!.prompt_tokens).toBe(layout.length);
    expectSameTopLogprobs(spelled.choices[0]!.logprobs!.top_logprobs, filled.choices[0]!.logprobs!.top_logprobs);
    for (const other of [unfilled, swapped]) expect(other.choices[0]!.logprobs!.token_logprobs![0]).not.toBeCloseTo(filled.choices[0]!.logprobs!.token_logprobs![0]!, 5);
  });

  it("a model without FIM tokens answers suffix with a 400 naming suffix and saying why", async () => {
    const res = await post(server, "/completions", { model: "tiny-chat", prompt: "def f(", suffix: "return x" });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; details: Record<string, any> };
    expect(body.details.suffix._errors[0]).toMatch(/fill in the middle.*FIM/);
    // An empty suffix asks for nothing it cannot do: a plain completion.
    const empty = await post(server, "/completions", { model: "tiny-chat", prompt: "def f(", suffix: "", max_tokens: 2 });
    expect(empty.status).toBe(200);
  });

  it("a prompt over the context is a 400 naming prompt that says so, and costs nothing", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const before = getBalances(server.db, accountId).USD;
    const res = await post(server, "/completions", { model: "tiny-chat", prompt: "hello world ".repeat(2000) }, { key });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; details: Record<string, any> };
    expect(body.details.prompt._errors[0]).toMatch(/tokens.*context holds 2048/);
    expect(getBalances(server.db, accountId).USD).toBe(before);
  });

  it("refuses a megabytes-long prompt by its length before tokenizing it, naming which prompt", async () => {
    const huge = "x".repeat(7_000_000);
    const res = await post(server, "/completions", { model: "tiny-chat", prompt: ["fine", huge] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { details: Record<string, any> };
    expect(body.details.prompt["1"]._errors[0]).toMatch(/context holds 2048/);
    const alone = await post(server, "/completions", { model: "tiny-chat", prompt: huge });
    expect(alone.status).toBe(400);
    expect(((await alone.json()) as { details: Record<string, any> }).details.prompt._errors[0]).toMatch(/context holds 2048/);
  });

  it("refuses bad fields with a 400 naming them, never a 500", async () => {
    for (const [field, extra] of [
      ["logprobs", { logprobs: 6 }],
      ["max_tokens", { max_tokens: -1 }],
      ["best_of", { best_of: 1, n: 2 }],
      ["prompt", { prompt: [] }],
      ["prompt", { prompt: [1, "a"] }],
      ["prompt", { prompt: [["a"]] }],
      ["prompt", { prompt: ["a", "b", "c"], n: 2 }],
      ["n", { n: 5 }],
      ["logit_bias", { logit_bias: { "1": "x" } }],
      ["temperature", { temperature: 3 }],
      ["stop", { stop: 5 }],
      ["model", { model: "" }],
    ] as const) {
      const res = await post(server, "/completions", { model: "tiny-chat", prompt: "Hi", ...extra });
      expect(res.status, field).toBe(400);
      const body = (await res.json()) as { details: Record<string, unknown> };
      expect(Object.keys(body.details), field).toContain(field);
    }
  });

  describe("best_of", () => {
    // Choice i samples with seed + i, so n: 3 shows the three candidates best_of: 3 generates.
    const sampled = { model: "tiny-chat", prompt: "Once upon", max_tokens: 6, temperature: 1, seed: 1 } as const;
    type Legacy = { index: number; text: string; logprobs: { token_logprobs: number[] } | null };
    type Body = { choices: Legacy[]; usage: { prompt_tokens: number; completion_tokens: number }; cost: { usd: number } };
    const meanLogprob = (choice: Legacy) => choice.logprobs!.token_logprobs.reduce((sum, lp) => sum + lp, 0) / choice.logprobs!.token_logprobs.length;
    let candidates: Body;
    let ranked: Legacy[];
    beforeAll(async () => {
      candidates = (await (await post(server, "/completions", { ...sampled, n: 3, logprobs: 1 })).json()) as Body;
      ranked = [...candidates.choices].sort((a, b) => meanLogprob(b) - meanLogprob(a));
      // This seed's best candidate is not the first generated: ranking has something to do.
      expect(ranked.map((c) => c.index)).toEqual([2, 1, 0]);
    });

    it("returns the n candidates with the highest log probability per token, best first, and bills every candidate", async () => {
      const res = await post(server, "/completions", { ...sampled, n: 2, best_of: 3, logprobs: 1 });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-service-unsupported-parameters")).toBeNull();
      const body = (await res.json()) as Body;
      expect(body.choices.map((c) => [c.index, c.text])).toEqual([
        [0, ranked[0]!.text],
        [1, ranked[1]!.text],
      ]);
      // The same tokens' log probabilities, to float noise (the prompt came partly from the cache this time).
      for (const [i, lp] of body.choices[0]!.logprobs!.token_logprobs.entries()) expect(lp).toBeCloseTo(ranked[0]!.logprobs!.token_logprobs[i]!, 5);
      expect(body.usage.completion_tokens).toBe(candidates.usage.completion_tokens);
      expect(body.cost.usd).toBe(candidates.cost.usd);
    });

    it("ranks without showing log probabilities that were not asked for, echo included", async () => {
      const res = await post(server, "/completions", { ...sampled, best_of: 3, echo: true });
      expect(res.status).toBe(200);
      const body = (await res.json()) as Body;
      expect(body.choices).toHaveLength(1);
      expect(body.choices[0]).toMatchObject({ index: 0, text: `Once upon${ranked[0]!.text}`, logprobs: null });
    });

    it("ranks a relayed model's candidates on the log probabilities its upstream reports (echo too: the relay echoes text)", async () => {
      const res = await post(relay, "/completions", { ...sampled, model: "relay-chat", best_of: 3, echo: true }, { key: relay.createKey({ usd: 10 }).key });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-service-unsupported-parameters")).toBeNull();
      const body = (await res.json()) as Body;
      expect(body.choices.map((c) => c.text)).toEqual([`Once upon${ranked[0]!.text}`]);
      expect(body.usage.completion_tokens).toBe(candidates.usage.completion_tokens);
    });

    it("is a 400 naming best_of with stream, or past the model's sequences", async () => {
      for (const extra of [{ best_of: 2, stream: true }, { best_of: 5 }, { prompt: ["a", "b"], n: 2, best_of: 3 }]) {
        const res = await post(server, "/completions", { ...sampled, ...extra });
        expect(res.status, JSON.stringify(extra)).toBe(400);
        expect(Object.keys(((await res.json()) as { details: Record<string, unknown> }).details)).toContain("best_of");
      }
      // best_of equal to n is n, streamed or not.
      expect((await post(server, "/completions", { ...sampled, n: 2, best_of: 2, stream: true })).status).toBe(200);
    });
  });

  it("refuses a logit_bias token outside the vocabulary with a 400 naming its key", async () => {
    const res = await post(server, "/completions", { model: "tiny-chat", prompt: "Hi", max_tokens: 2, logit_bias: { "5": 1, "999999": -100 } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { details: { logit_bias: Record<string, { _errors: string[] }> } };
    expect(body.details.logit_bias["999999"]!._errors.join(" ")).toMatch(/outside this model's vocabulary/);
  });

  it("keeps user on the request's usage row", async () => {
    const res = await post(server, "/completions", { model: "tiny-chat", prompt: "Hi", max_tokens: 2, user: "completions-user-1" });
    expect(res.status).toBe(200);
    const rows = listUsage(server.db).filter((row) => row.user === "completions-user-1");
    expect(rows.map((row) => [row.endpoint, row.metadata])).toEqual([["/completions", null]]);
  });

  it("shows in the Prometheus token counters as chat does", async () => {
    const counter = async (name: string) => {
      const text = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.adminKey}` } })).text();
      const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes('model="tiny-coder"'));
      return line ? Number(line.split(" ").at(-1)) : 0;
    };
    const [completionBefore, promptBefore] = [await counter("hearth_chat_completion_tokens_total"), await counter("hearth_chat_prompt_tokens_total")];
    const completion = await server.openai().completions.create({ model: "tiny-coder", prompt: "x=(", max_tokens: 5, ...greedy });
    expect((await counter("hearth_chat_completion_tokens_total")) - completionBefore).toBe(completion.usage!.completion_tokens);
    expect((await counter("hearth_chat_prompt_tokens_total")) - promptBefore).toBe(completion.usage!.prompt_tokens);
  });

  it("serves the Vercel AI SDK's completion model, whole and streamed", async () => {
    const provider = createOpenAI({ baseURL: server.baseUrl, apiKey: server.adminKey });
    const model = provider.completion("tiny-chat");
    const whole = await generateText({ model, prompt: "Once upon a time", maxOutputTokens: 10, temperature: 0, seed: 7 });
    expect(whole.text.length).toBeGreaterThan(0);
    expect(whole.usage.outputTokens).toBe(10);
    expect(whole.finishReason).toBe("length");
    const streamed = streamText({ model, prompt: "Once upon a time", maxOutputTokens: 10, temperature: 0, seed: 7 });
    let text = "";
    for await (const piece of streamed.textStream) text += piece;
    expect(text).toBe(whole.text);
    expect((await streamed.usage).outputTokens).toBe(10);
  });

  it("a client that disconnects mid-stream pays once for what was produced", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const before = getBalances(server.db, accountId).USD;
    const res = await post(server, "/completions", { model: "tiny-chat", prompt: "Once upon a time", max_tokens: 1500, stream: true, ...greedy }, { key });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    for (let i = 0; i < 4; i++) await reader.read();
    await reader.cancel();
    const [row, ...more] = await usageRows(accountId, 1);
    expect(more).toHaveLength(0);
    expect(row!.status).toBe(499);
    expect(row!.endpoint).toBe("/completions");
    expect(row!.completionTokens).toBeGreaterThan(0);
    expect(row!.completionTokens).toBeLessThan(1500);
    // Settled once: nothing more leaves the account afterwards.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(before - getBalances(server.db, accountId).USD).toBe(chargeOf({ prompt_tokens: row!.promptTokens, completion_tokens: row!.completionTokens }));
    expect(countReservations(server.db)).toBe(0);
  });
});

describe("POST /completions relayed to an upstream's /completions", () => {
  it("gives the upstream's completion, billed on the relay from the upstream's usage", async () => {
    const { key, accountId } = relay.createKey({ usd: 1 });
    const before = getBalances(relay.db, accountId).USD;
    const direct = await server.openai().completions.create({ model: "tiny-chat", prompt: "Once upon a time", max_tokens: 12, ...greedy });
    const relayed = await relay.openai(key).completions.create({ model: "relay-chat", prompt: "Once upon a time", max_tokens: 12, ...greedy });
    expect(relayed.choices[0]!.text).toBe(direct.choices[0]!.text);
    expect(relayed.usage).toMatchObject({ prompt_tokens: direct.usage!.prompt_tokens, completion_tokens: 12 });
    expect(before - getBalances(relay.db, accountId).USD).toBe(chargeOf(relayed.usage!));
    expect(listUsage(relay.db, accountId)[0]).toMatchObject({ endpoint: "/completions", model: "relay-chat", status: 200 });
  });

  it("relays streaming, logprobs, n and fill-in-the-middle", async () => {
    const direct = await server.openai().completions.create({ model: "tiny-coder", prompt: "x=(", suffix: ")+1", max_tokens: 8, logprobs: 2, ...greedy });
    const stream = await relay.openai().completions.create({ model: "relay-coder", prompt: "x=(", suffix: ")+1", max_tokens: 8, logprobs: 2, stream: true, ...greedy });
    let text = "";
    const tokens: string[] = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.text;
        tokens.push(...(choice.logprobs?.tokens ?? []));
      }
    }
    expect(text).toBe(direct.choices[0]!.text);
    expect(tokens).toEqual(direct.choices[0]!.logprobs!.tokens);

    const two = await relay.openai().completions.create({ model: "relay-chat", prompt: ["Hi", "Ho"], n: 2, max_tokens: 4, echo: true, ...greedy });
    expect(two.choices.map((c) => c.text.slice(0, 2))).toEqual(["Hi", "Hi", "Ho", "Ho"]);
  });

  it("passes on the upstream's 400 for a suffix its model cannot fill, naming suffix", async () => {
    const res = await post(relay, "/completions", { model: "relay-chat", prompt: "def f(", suffix: "return x" });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; details: Record<string, any> };
    expect(body.details.suffix._errors[0]).toMatch(/FIM/);
  });
});
