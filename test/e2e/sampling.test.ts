import { readGgufFileInfo } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { byteToUnicode } from "../../src/engines/tokenizers/byteToUnicode.js";
import { post, startTestServer, tinyChatPath, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const ask = [{ role: "user" as const, content: "Tell me something" }];

/** Token ids of log-probability entries, from the model's own vocabulary (byte-level BPE spelled through GPT-2's byte table). */
async function tokenIds(entries: readonly { bytes: number[] | null }[]): Promise<number[]> {
  const info = await readGgufFileInfo(tinyChatPath(), { readTensorInfo: false });
  const vocabulary = info.metadata.tokenizer.ggml.tokens as string[];
  const table = byteToUnicode();
  return entries.map((e) => vocabulary.indexOf(e.bytes!.map((b) => table[b]).join("")));
}

describe("log probabilities", () => {
  it("non-streaming: one entry per token in the standard's shape and the reference's summary, top_logprobs as asked", async () => {
    const completion = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3 });
    const choice = completion.choices[0]!;
    const entries = choice.logprobs!.content!;
    expect(entries).toHaveLength(completion.usage!.completion_tokens);
    expect(entries.map((e) => e.token).join("")).toBe(choice.message.content);
    for (const entry of entries) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(Buffer.from(entry.bytes!).toString("utf8")).toBe(entry.token);
      expect(entry.top_logprobs).toHaveLength(3);
      const tops = entry.top_logprobs.map((t) => t.logprob);
      expect([...tops].sort((a, b) => b - a)).toEqual(tops);
      // Greedy decoding picks the most likely token: it is the first alternative.
      expect(entry.top_logprobs[0]!.token).toBe(entry.token);
      expect(entry.top_logprobs[0]!.logprob).toBeCloseTo(entry.logprob, 10);
    }
    const flat = choice.logprobs as unknown as { token: string; logprob: number; bytes: number[]; top_logprobs: unknown[] };
    expect(flat.token).toBe(choice.message.content);
    expect(flat.logprob).toBeCloseTo(
      entries.reduce((s, e) => s + e.logprob, 0),
      8,
    );
    expect(flat.bytes).toEqual(entries.flatMap((e) => e.bytes));
  });

  it("streaming: each content chunk carries its tokens' entries; together they spell the text", async () => {
    const stream = await server
      .openai()
      .chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 12, temperature: 0.8, seed: 4, logprobs: true, top_logprobs: 2, stream: true });
    let text = "";
    const entries: { token: string; top_logprobs: unknown[] }[] = [];
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice?.delta.content) continue;
      text += choice.delta.content;
      const logprobs = choice.logprobs as unknown as { content: typeof entries; token: string; logprob: number };
      expect(logprobs.content.length).toBeGreaterThan(0);
      expect(logprobs.token).toBe(logprobs.content.map((e) => e.token).join(""));
      entries.push(...logprobs.content);
    }
    expect(entries).toHaveLength(12);
    expect(entries.map((e) => e.token).join("")).toBe(text);
    expect(entries.every((e) => e.top_logprobs.length === 2)).toBe(true);
  });

  it("is null when not asked for", async () => {
    const completion = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 3 });
    expect(completion.choices[0]!.logprobs).toBeNull();
  });
});

describe("several choices", () => {
  it("n=2 returns two indexed choices generated in parallel, tokens summed in usage", async () => {
    const completion = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 8, temperature: 1, seed: 21, n: 2 });
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(completion.choices[0]!.message.content).not.toBe(completion.choices[1]!.message.content);
    expect(completion.usage!.completion_tokens).toBe(16);
  });

  it("n=2 streams both choices, each ending with its own finish_reason", async () => {
    const stream = await server
      .openai()
      .chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 6, temperature: 1, seed: 8, n: 2, stream: true, stream_options: { include_usage: true } });
    const text = ["", ""];
    const finish: (string | null)[] = [null, null];
    let usage: { completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text[choice.index] += choice.delta.content ?? "";
        if (choice.finish_reason) finish[choice.index] = choice.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(finish).toEqual(["length", "length"]);
    expect(text[0]!.length).toBeGreaterThan(0);
    expect(text[1]!.length).toBeGreaterThan(0);
    expect(usage!.completion_tokens).toBe(12);
  });
});

describe("sampling controls", () => {
  const greedy = async (extra: Record<string, unknown> = {}) => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: ask, max_tokens: 16, temperature: 0, ...extra });
    expect(res.status).toBe(200);
    return ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
  };

  it("max_temp/min_temp: dynamic temperature pinned at 0 is greedy; a hot range samples, reproducibly per seed", async () => {
    const plain = await greedy();
    expect(await greedy({ temperature: 1, min_temp: 0, max_temp: 0 })).toBe(plain);
    const hot = { temperature: 1, min_temp: 1.2, max_temp: 2, seed: 99 };
    const first = await greedy(hot);
    expect(first).not.toBe(plain);
    expect(await greedy(hot)).toBe(first);
  });

  it("penalties change what greedy decoding picks", async () => {
    const plain = await greedy();
    expect(await greedy({ repetition_penalty: 1.5 })).not.toBe(plain);
    expect(await greedy({ frequency_penalty: 2, presence_penalty: 2 })).not.toBe(plain);
  });

  it("stop_token_ids end generation at that token, which is not part of the text", async () => {
    const completion = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 16, temperature: 0, logprobs: true });
    const entries = completion.choices[0]!.logprobs!.content!;
    // Token ids from the model's own vocabulary (byte-level BPE spelled through GPT-2's byte table).
    const info = await readGgufFileInfo(tinyChatPath(), { readTensorInfo: false });
    const vocabulary = info.metadata.tokenizer.ggml.tokens as string[];
    const table = byteToUnicode();
    const ids = entries.map((e) => vocabulary.indexOf(e.bytes!.map((b) => table[b]).join("")));
    expect(ids.every((id) => id >= 0)).toBe(true);
    const at = ids.findIndex((id, i) => i >= 2 && !ids.slice(0, i).includes(id));
    expect(at).toBeGreaterThan(0);
    const stopped = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 16, temperature: 0, stop_token_ids: [ids[at]!] } as never);
    expect(stopped.choices[0]!.finish_reason).toBe("stop");
    expect(stopped.choices[0]!.message.content).toBe(
      entries
        .slice(0, at)
        .map((e) => e.token)
        .join(""),
    );
  });

  it("logit_bias adds to the logits before sampling: +100 makes a token greedy decoding's every pick, -100 keeps out the one it took first", async () => {
    const plain = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 6, temperature: 0, logprobs: true });
    const entries = plain.choices[0]!.logprobs!.content!;
    const ids = await tokenIds(entries);
    const favoured = entries.findIndex((e, i) => i > 0 && e.token !== entries[0]!.token);
    expect(favoured).toBeGreaterThan(0);
    const forced = await server.openai().chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 6, temperature: 0, logit_bias: { [ids[favoured]!]: 100 } });
    expect(forced.choices[0]!.message.content).toBe(entries[favoured]!.token.repeat(6));
    const banned = await server
      .openai()
      .chat.completions.create({ model: "tiny-chat", messages: ask, max_tokens: 6, temperature: 0, logprobs: true, logit_bias: { [ids[0]!]: -100 } });
    const bannedIds = await tokenIds(banned.choices[0]!.logprobs!.content!);
    expect(bannedIds).toHaveLength(6);
    expect(bannedIds).not.toContain(ids[0]);
    // /completions takes it the same way.
    const completion = (await (
      await post(server, "/completions", { model: "tiny-chat", prompt: "Once", max_tokens: 4, temperature: 0, logit_bias: { [ids[favoured]!]: 100 } })
    ).json()) as {
      choices: { text: string }[];
    };
    expect(completion.choices[0]!.text).toBe(entries[favoured]!.token.repeat(4));
  });

  it("logit_bias reaches the end-of-turn token too: -100 keeps the model answering to max_tokens, +100 ends the answer at once", async () => {
    const info = await readGgufFileInfo(tinyChatPath(), { readTensorInfo: false });
    const endOfTurn = info.metadata.tokenizer.ggml.eos_token_id as number;
    // At temperature 1 the random model ends its turn every ~85 tokens on average.
    const body = { model: "tiny-chat", messages: [{ role: "user" as const, content: "Hi" }], temperature: 1, seed: 7 };
    const ended = await server.openai().chat.completions.create({ ...body, max_tokens: 1500 });
    expect(ended.choices[0]!.finish_reason).toBe("stop");
    const length = ended.usage!.completion_tokens + 20;
    const kept = await server.openai().chat.completions.create({ ...body, max_tokens: length, logit_bias: { [endOfTurn]: -100 } });
    expect(kept.choices[0]!.finish_reason).toBe("length");
    expect(kept.usage!.completion_tokens).toBe(length);
    const cut = await server.openai().chat.completions.create({ ...body, max_tokens: 50, logit_bias: { [endOfTurn]: 100 } });
    expect(cut.choices[0]).toMatchObject({ finish_reason: "stop", message: { content: "" } });
  });

  it.each([
    ["n above the model's parallel sequences", { n: 5 }, ["n"], /at most 4 choices/],
    ["top_logprobs without logprobs", { top_logprobs: 2 }, ["top_logprobs"], /needs logprobs/],
    ["a negative top_logprobs", { logprobs: true, top_logprobs: -1 }, ["top_logprobs"], /./],
    ["min_temp above max_temp", { min_temp: 1.5, max_temp: 0.5 }, ["min_temp"], /above max_temp/],
    ["max_temp out of range", { max_temp: 3 }, ["max_temp"], /./],
    ["a stop token outside the vocabulary", { stop_token_ids: [5, 999999] }, ["stop_token_ids", "1"], /outside this model's vocabulary/],
    ["a logit_bias token outside the vocabulary", { logit_bias: { 5: 1, 999999: -100 } }, ["logit_bias", "999999"], /outside this model's vocabulary/],
    ["a logit_bias key that is not a token id", { logit_bias: { hello: 1 } }, ["logit_bias", "hello"], /token ids/],
    ["a logit_bias value above 100", { logit_bias: { 5: 101 } }, ["logit_bias", "5"], /./],
  ])("%s -> 400 naming the field", async (_name, extra, path, message) => {
    const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: ask, max_tokens: 3, ...extra });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { details: Record<string, any> };
    let node = json.details;
    for (const key of path) node = node[key];
    expect(node._errors.join(" ")).toMatch(message);
  });
});
