import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { getBalances, ledgerTotals, listLedgerEntries } from "../../src/store/ledger.js";
import { tinyEmbeddingEntry, tinyGgufEmbeddingEntry } from "../helpers/mediaModels.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyEmbeddingEntry({ pricing: { input: { usd: 2, diem: 2 } } }),
      tinyGgufEmbeddingEntry({ pricing: { input: { usd: 1, diem: 1 } } }),
      tinyEmbeddingEntry({ id: "fixed-size", embedding: { supportsCustomDimensions: false, pooling: "cls" } }),
    ],
  });
});
afterAll(() => server.stop());

const norm = (v: ArrayLike<number>) => Math.hypot(...Array.from(v));
const decode = (b64: string) => {
  const bytes = Buffer.from(b64, "base64");
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
};
const SENTENCES = ["The quick brown fox jumps over the lazy dog.", "Hello world, how is the weather today?", "a cat sat on the mat"];

describe("POST /embeddings with the official client", () => {
  it("float: one unit vector per input, truncated to `dimensions` and renormalised, with token usage", async () => {
    const full = await server.openai().embeddings.create({ model: "tiny-embedding", input: SENTENCES, encoding_format: "float" });
    expect(full.object).toBe("list");
    expect(full.model).toBe("tiny-embedding");
    expect(full.data.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(full.data[0]!.embedding).toHaveLength(32);
    for (const d of full.data) expect(norm(d.embedding)).toBeCloseTo(1, 5);
    expect(full.usage.prompt_tokens).toBeGreaterThan(SENTENCES.length * 3);
    expect(full.usage.total_tokens).toBe(full.usage.prompt_tokens);

    const reduced = await server.openai().embeddings.create({ model: "tiny-embedding", input: SENTENCES, encoding_format: "float", dimensions: 16 });
    expect(reduced.data[0]!.embedding).toHaveLength(16);
    expect(norm(reduced.data[0]!.embedding)).toBeCloseTo(1, 5);
    // Truncate-then-renormalise: the same direction as the first 16 components of the full vector.
    const head = full.data[0]!.embedding.slice(0, 16);
    const scale = norm(head);
    head.forEach((x, i) => {
      expect(reduced.data[0]!.embedding[i]).toBeCloseTo(x / scale, 5);
    });
  });

  it("base64: the client's default encoding decodes to the same vectors", async () => {
    const viaClient = await server.openai().embeddings.create({ model: "tiny-embedding", input: SENTENCES[1]!, dimensions: 8 });
    expect(viaClient.data[0]!.embedding).toHaveLength(8);
    const raw = (await (await post(server, "/embeddings", { model: "tiny-embedding", input: SENTENCES[1], encoding_format: "base64", dimensions: 8 })).json()) as any;
    expect(typeof raw.data[0].embedding).toBe("string");
    const vector = decode(raw.data[0].embedding);
    expect(vector).toHaveLength(8);
    vector.forEach((x, i) => {
      expect(viaClient.data[0]!.embedding[i]).toBeCloseTo(x, 6);
    });
  });

  it("a batch runs together and gives each input the vector it gets alone (padding is masked)", async () => {
    const inputs = Array.from({ length: 40 }, (_, i) => `${SENTENCES[i % 3]} number ${i}`);
    const batch = await server.openai().embeddings.create({ model: "tiny-embedding", input: inputs, encoding_format: "float" });
    expect(batch.data).toHaveLength(40);
    const alone = await server.openai().embeddings.create({ model: "tiny-embedding", input: inputs[17]!, encoding_format: "float" });
    alone.data[0]!.embedding.forEach((x, i) => {
      expect(batch.data[17]!.embedding[i]).toBeCloseTo(x, 4);
    });
    expect(batch.data[0]!.embedding).not.toEqual(batch.data[1]!.embedding);
  });

  it("GGUF models embed through node-llama-cpp, in parallel contexts, with the model's own pooling", async () => {
    const result = await server.openai().embeddings.create({ model: "tiny-embedding-gguf", input: [...SENTENCES, ...SENTENCES], encoding_format: "float" });
    expect(result.data).toHaveLength(6);
    expect(result.data[0]!.embedding).toHaveLength(64);
    for (const d of result.data) expect(norm(d.embedding)).toBeCloseTo(1, 5);
    expect(result.data[0]!.embedding).toEqual(result.data[3]!.embedding);
    expect(result.data[0]!.embedding).not.toEqual(result.data[1]!.embedding);
    const models = (await (await fetch(`${server.baseUrl}/models?type=embedding`)).json()) as any;
    const gguf = models.data.find((m: any) => m.id === "tiny-embedding-gguf");
    expect(gguf.model_spec).toMatchObject({ embeddingDimensions: 64, maxInputTokens: 511, supportsCustomDimensions: false });
    const onnx = models.data.find((m: any) => m.id === "tiny-embedding");
    expect(onnx.model_spec).toMatchObject({ embeddingDimensions: 32, maxInputTokens: 128, supportsCustomDimensions: true });
  });
});

describe("what /embeddings refuses", () => {
  it("token arrays, with a 400 that says what to send", async () => {
    for (const input of [
      [1, 2, 3],
      [[1, 2], [3]],
    ]) {
      const res = await post(server, "/embeddings", { model: "tiny-embedding", input });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toMatch(/token arrays are not supported.*check_embedding_ctx_length=False/);
    }
  });

  it("empty strings, too many dimensions, reduced dimensions on a fixed-size model, inputs over the token limit", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ input: "" }, /empty/],
      [{ input: ["ok", ""] }, /empty/],
      [{ input: "hello", dimensions: 33 }, /cannot exceed/],
      [{ model: "fixed-size", input: "hello", dimensions: 16 }, /does not support reduced dimensions/],
      [{ input: "word ".repeat(200) }, /takes at most 128/],
      [{ input: "hello", encoding_format: "int8" }, /encoding_format/],
    ];
    for (const [body, message] of cases) {
      const res = await post(server, "/embeddings", { model: "tiny-embedding", ...body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(((await res.json()) as any).error).toMatch(message);
    }
    expect((await post(server, "/embeddings", { model: "fixed-size", input: "hello", dimensions: 32 })).status).toBe(200);
    expect((await post(server, "/embeddings", { model: "nope", input: "hello" })).status).toBe(404);
  });
});

describe("credits and limits for embeddings", () => {
  function fundedKey(usdMicros: number, overrides?: string) {
    const account = createAccount(server.db, "embeddings");
    server.credits.grant(account.id, "USD", usdMicros, "test");
    const { secret } = createApiKey(server.db, { accountId: account.id, description: "e", keyType: "INFERENCE", rateLimitOverrides: overrides });
    return { key: secret, accountId: account.id };
  }

  it("charges per input token at the model's price per million", async () => {
    const { key, accountId } = fundedKey(1_000_000);
    const onnx = (await (await post(server, "/embeddings", { model: "tiny-embedding", input: SENTENCES }, { key })).json()) as any;
    const gguf = (await (await post(server, "/embeddings", { model: "tiny-embedding-gguf", input: SENTENCES }, { key })).json()) as any;
    const expected = onnx.usage.prompt_tokens * 2 + gguf.usage.prompt_tokens * 1;
    expect(1_000_000 - getBalances(server.db, accountId).USD).toBe(expected);
    expect(ledgerTotals(server.db, accountId)).toEqual(getBalances(server.db, accountId));
    const skus = listLedgerEntries(server.db, { accountId, kind: "charge" }).map((c) => c.sku);
    expect(skus).toEqual(["tiny-embedding-embedding-input-mtoken", "tiny-embedding-gguf-embedding-input-mtoken"]);
  });

  it("402 when the tokens cannot be paid, 429 past the embedding tier", async () => {
    const poor = fundedKey(1);
    const res = await post(server, "/embeddings", { model: "tiny-embedding", input: SENTENCES }, { key: poor.key });
    expect(res.status).toBe(402);
    const limited = fundedKey(1_000_000, JSON.stringify({ embedding: { rpm: 1 } }));
    await server.withClockStopped(async () => {
      const first = await post(server, "/embeddings", { model: "tiny-embedding", input: "a" }, { key: limited.key });
      expect(first.headers.get("x-ratelimit-limit-requests")).toBe("1");
      expect((await post(server, "/embeddings", { model: "tiny-embedding", input: "a" }, { key: limited.key })).status).toBe(429);
    });
  });
});
