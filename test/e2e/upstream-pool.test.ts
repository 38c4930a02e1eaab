import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { AdminModelsResponse } from "../../src/api/admin/schema.js";
import { displayBaseUrl } from "../../src/config/upstreamReplicas.js";
import { rendezvousOrder } from "../../src/engines/upstream/rendezvousHash.js";
import { loadModelsConfig } from "../../src/models/loadModelsConfig.js";
import { getBalances } from "../../src/store/ledger.js";
import { countReservations } from "../../src/store/reservations.js";
import { listUsage } from "../../src/store/usage.js";
import { TcpRelay } from "../helpers/tcpRelay.js";
import { tinyEmbeddingEntry } from "../helpers/mediaModels.js";
import { startTestServer, tinyChatEntry, type TestServer } from "../helpers/testServer.js";

/**
 * A gateway Hearth whose model is a pool of three other Hearth nodes on loopback, driven by the
 * official openai client. Each node runs tiny-chat on its own llama.cpp and knows the gateway
 * only as one inference key with credits of its own; callers' keys, usage and credits live at
 * the gateway. The third node sits behind a TCP relay that can be switched off and on (a box
 * that crashes and comes back) or made to die mid-answer.
 */
interface Node {
  server: TestServer;
  /** The gateway's account on this node: its usage rows are the requests this node served. */
  accountId: string;
  /** The replica's name at the gateway (its base URL as the pool shows it). */
  replica: string;
  weight: number;
}
const nodes: Node[] = [];
let relay: TcpRelay;
let gateway: TestServer;
let dir: string | undefined;

/** $1 per million prompt tokens and $1000 per million completion tokens: a completion token is 1,000 micro-dollars. */
const PRICED = { input: { usd: 1, diem: 1 }, output: { usd: 1000, diem: 1000 } };
const POOL = "pool-chat";
const EMBED_POOL = "pool-embed";
const topic = (name: string) => `This is a long document about ${name}. `.repeat(25);
const served = () => nodes.map((node) => listUsage(node.server.db, node.accountId).length);
const delta = (before: number[]) => served().map((count, i) => count - before[i]!);
/** The replica rendezvous hashing gives a key (the pool's own rule, over the gateway's replica names and weights). */
const ownerOf = (key: string) =>
  nodes.indexOf(
    rendezvousOrder(
      `key:${key}`,
      nodes.map((n) => ({ id: n.replica, weight: n.weight, node: n })),
    )[0]!.node,
  );
const keysOwnedBy = (index: number, count: number, prefix: string) => {
  const found: string[] = [];
  for (let i = 0; found.length < count; i++) if (ownerOf(`${prefix}${i}`) === index) found.push(`${prefix}${i}`);
  return found;
};

async function replicaStates(model = POOL): Promise<NonNullable<AdminModelsResponse["data"][number]["replicas"]>> {
  const res = await fetch(`${gateway.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${gateway.adminKey}` } });
  const body = (await res.json()) as AdminModelsResponse;
  return body.data.find((m) => m.id === model)!.replicas!;
}

/** A streamed chat with usage, read to the end: its text, usage and cost. */
async function streamChat(client: OpenAI, key: string, content: string) {
  const stream = await client.chat.completions.create({
    model: POOL,
    messages: [{ role: "user", content }],
    max_tokens: 4,
    temperature: 0,
    prompt_cache_key: key,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let last: (OpenAI.ChatCompletionChunk & { cost?: { usd: number } }) | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? "";
    last = chunk;
  }
  return { text, usage: last!.usage!, cost: last!.cost! };
}

beforeAll(async () => {
  const env: Record<string, string> = {};
  for (let i = 0; i < 3; i++) {
    const server = await startTestServer({ models: [tinyChatEntry(), tinyEmbeddingEntry()] });
    // The gateway's key on this node, with credit only for it.
    const { key, accountId } = server.createKey({ usd: 10 });
    nodes.push({ server, accountId, replica: "", weight: i === 2 ? 2 : 1 });
    env[`NODE_${i}_KEY`] = key;
  }
  relay = await TcpRelay.start(Number(new URL(nodes[2]!.server.baseUrl).port));
  const urls = [nodes[0]!.server.baseUrl, nodes[1]!.server.baseUrl, relay.url];
  urls.forEach((url, i) => {
    env[`NODE_${i}_URL`] = url;
    nodes[i]!.replica = displayBaseUrl(url);
  });

  dir = mkdtempSync(join(tmpdir(), "hearth-pool-"));
  const configPath = join(dir, "models.config.json");
  const replicas = nodes.map((node, i) => ({ baseUrlEnv: `NODE_${i}_URL`, apiKeyEnv: `NODE_${i}_KEY`, weight: node.weight }));
  const upstream = { model: "tiny-chat", contextSize: 2048, timeoutMs: 10_000, replicas, healthCheck: { intervalMs: 500, timeoutMs: 5000, ejectMs: 250, maxEjectMs: 1000 } };
  const embeddings = { id: EMBED_POOL, type: "embedding", backend: "upstream", pricing: { input: { usd: 1, diem: 1 } }, upstream: { ...upstream, model: "tiny-embedding" } };
  writeFileSync(configPath, JSON.stringify({ models: [{ id: POOL, type: "text", backend: "upstream", pricing: PRICED, upstream }, embeddings] }));
  // Loaded before the gateway starts checking them: a model loading in this shared process must not look like a sick replica.
  for (const node of nodes) await Promise.all([node.server.models.load("tiny-chat"), node.server.models.load("tiny-embedding")]);
  gateway = await startTestServer({ models: loadModelsConfig(configPath, dir, env).models, config: { metricsPort: 0 } });
});

afterAll(async () => {
  await gateway?.stop();
  await relay?.off();
  for (const node of nodes) await node.server.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a gateway Hearth in front of a pool of three Hearth nodes", () => {
  it("sends one prompt_cache_key to one replica every time, where the cached prefix grows", async () => {
    const { key: callerKey } = gateway.createKey({ usd: 1 });
    const client = gateway.openai(callerKey);
    const before = served();
    const usages: OpenAI.CompletionUsage[] = [];
    for (const question of ["one", "two", "three", "four"]) {
      const completion = await client.chat.completions.create({
        model: POOL,
        messages: [{ role: "user", content: `${topic("rivers")} Question ${question}?` }],
        max_tokens: 2,
        temperature: 0,
        prompt_cache_key: "reader-7",
      });
      usages.push(completion.usage!);
    }
    const owner = ownerOf("reader-7");
    expect(delta(before)).toEqual(nodes.map((_, i) => (i === owner ? 4 : 0)));
    // The first request wrote the document into the owner's cache; each repeat reads it back.
    const cached = usages.map((u) => u.prompt_tokens_details!.cached_tokens!);
    expect(cached[1]).toBeGreaterThan(cached[0]!);
    for (const [i, usage] of usages.entries()) if (i > 0) expect(cached[i]).toBeGreaterThan(usage.prompt_tokens * 0.8);

    // Without a key, a long shared system prompt is what keeps requests together.
    const system = `You are the archivist. ${topic("the archive")}`;
    const again = served();
    for (const question of ["a", "b", "c"])
      await client.chat.completions.create({
        model: POOL,
        messages: [
          { role: "system", content: system },
          { role: "user", content: question },
        ],
        max_tokens: 1,
      });
    expect(delta(again).sort()).toEqual([0, 0, 3]);
  });

  it("spreads keys over the replicas by weight: each key lands where the routing module puts it", async () => {
    const { key: callerKey } = gateway.createKey({ usd: 1 });
    const client = gateway.openai(callerKey);
    const keys = Array.from({ length: 16 }, (_, i) => `spread-${i}`);
    const expected = nodes.map((_, i) => keys.filter((key) => ownerOf(key) === i).length);
    const before = served();
    for (const key of keys) await client.chat.completions.create({ model: POOL, messages: [{ role: "user", content: `Hi ${key}` }], max_tokens: 1, prompt_cache_key: key });
    // Exactly the module's choice (its shares are tested over 30,000 keys in test/standalone/replicaPool.test.ts).
    expect(delta(before)).toEqual(expected);
    expect(expected.filter((count) => count > 0).length).toBeGreaterThanOrEqual(2);
  });

  it("loses no request when a replica dies mid-run: retried on another, billed once; re-admitted when it is back", async () => {
    const { key: callerKey, accountId } = gateway.createKey({ usd: 1 });
    const client = gateway.openai(callerKey);
    const keys = keysOwnedBy(2, 8, "run-");
    const before = served();
    const results: Awaited<ReturnType<typeof streamChat>>[] = [];
    for (const [i, key] of keys.entries()) {
      if (i === 3) await relay.off();
      results.push(await streamChat(client, key, `Request ${i}`));
    }
    const moved = delta(before);
    expect(moved[2]).toBe(3);
    expect(moved[0]! + moved[1]!).toBe(5);
    for (const result of results) expect(result.usage.completion_tokens).toBeGreaterThan(0);

    // One usage row and one charge per request at the gateway, whatever replica served it.
    const rows = listUsage(gateway.db, accountId);
    expect(rows).toHaveLength(8);
    expect(rows.every((row) => row.status === 200)).toBe(true);
    const charged = 1_000_000 - getBalances(gateway.db, accountId).USD;
    expect(charged).toBe(results.reduce((sum, r) => sum + Math.round(r.cost.usd * 1e6), 0));
    expect(charged).toBe(results.reduce((sum, r) => sum + r.usage.prompt_tokens + 1000 * r.usage.completion_tokens, 0));
    expect(countReservations(gateway.db)).toBe(0);

    const down = await replicaStates();
    expect(down.map((r) => r.baseUrl)).toEqual(nodes.map((n) => n.replica));
    expect(down[2]).toMatchObject({ healthy: false, inFlight: 0 });
    expect(down[2]!.errors).toBeGreaterThanOrEqual(1);
    expect(down[2]!.ejectedUntil).toBeGreaterThan(0);
    expect(down[0]!.healthy && down[1]!.healthy).toBe(true);
    const metrics = await (await fetch(gateway.metricsUrl!)).text();
    expect(metrics).toContain(`hearth_upstream_healthy{model="${POOL}",replica="${nodes[2]!.replica}"} 0`);
    expect(metrics).toMatch(new RegExp(`hearth_upstream_errors_total\\{model="${POOL}",replica="${nodes[2]!.replica.replaceAll(".", "\\.")}"\\} [1-9]`));
    expect(metrics).toMatch(/hearth_upstream_latency_seconds_count\{model="pool-chat",replica="[^"]+"\} [1-9]/);

    // Back on the same port: a health check after the back-off re-admits it, and its keys come home.
    await relay.on();
    await vi.waitFor(async () => expect((await replicaStates())[2]!.healthy).toBe(true), { timeout: 10_000, interval: 100 });
    const home = served();
    await streamChat(client, keys[0]!, "Back again");
    expect(delta(home)).toEqual([0, 0, 1]);
  });

  it("ends a stream cut by a dying replica with an error event, billed for what was sent", async () => {
    const { key: callerKey, accountId } = gateway.createKey({ usd: 1 });
    const [key] = keysOwnedBy(2, 1, "cut-");
    const stream = await gateway.openai(callerKey).chat.completions.create({
      model: POOL,
      messages: [{ role: "user", content: "Tell me a very long story" }],
      max_tokens: 300,
      temperature: 1,
      seed: 3,
      prompt_cache_key: key,
      stream: true,
    });
    let pieces = 0;
    let failure: unknown;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) pieces++;
        // A few tokens in, the box dies: the relay lets 1.5 kB more through and drops everything.
        if (pieces === 2) relay.dieAfter(1500);
      }
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as Error).message).toMatch(/upstream chat server at 127\.0\.0\.1:\d+ failed mid-stream/);
    expect(pieces).toBeGreaterThan(2);
    // Each piece streamed is a completion token (1,000 micro-dollars); the prompt, estimated, adds less than one.
    const charged = 1_000_000 - getBalances(gateway.db, accountId).USD;
    expect(Math.floor(charged / 1000)).toBe(pieces);
    expect(listUsage(gateway.db, accountId)).toHaveLength(1);
    expect(countReservations(gateway.db)).toBe(0);
    expect((await replicaStates())[2]!.healthy).toBe(false);
  });

  it("relays embeddings to the pool too: the nodes' vectors, billed on the upstream's token count, around a dead replica", async () => {
    // The third node is still down (the relay died with the stream above); this model's pool learns it on its first request there.
    const { key: callerKey, accountId } = gateway.createKey({ usd: 1 });
    const inputs = ["The quick brown fox jumps over the lazy dog.", "a cat sat on the mat", "Hello world", "pools of nodes"];
    const before = served();
    const results: OpenAI.CreateEmbeddingResponse[] = [];
    for (const input of inputs) results.push(await gateway.openai(callerKey).embeddings.create({ model: EMBED_POOL, input: [input, `${input} again`] }));
    const direct = await nodes[0]!.server.openai().embeddings.create({ model: "tiny-embedding", input: [inputs[0]!, `${inputs[0]!} again`], encoding_format: "float" });
    const viaGateway = await gateway.openai(callerKey).embeddings.create({ model: EMBED_POOL, input: [inputs[0]!, `${inputs[0]!} again`], encoding_format: "float" });
    viaGateway.data.forEach((item, i) => {
      expect(item.embedding).toHaveLength(direct.data[i]!.embedding.length);
      for (const [j, x] of item.embedding.entries()) expect(x).toBeCloseTo(direct.data[i]!.embedding[j]!, 5);
    });
    expect(viaGateway.usage.prompt_tokens).toBe(direct.usage.prompt_tokens);
    // Every request answered although the third replica refused its first one; the first two served them all (the load's probe included).
    const moved = delta(before);
    expect(moved[2]).toBe(0);
    expect(moved[0]! + moved[1]!).toBe(inputs.length + 2);
    // Charged the upstream's count ($1 per million: one micro-dollar a token), not the byte bound the hold was taken on.
    const tokens = [...results, viaGateway].reduce((sum, r) => sum + r.usage.prompt_tokens, 0);
    expect(1_000_000 - getBalances(gateway.db, accountId).USD).toBe(tokens);
    const byCount = (a: number, b: number) => a - b;
    expect(
      listUsage(gateway.db, accountId)
        .map((row) => row.promptTokens)
        .sort(byCount),
    ).toEqual([...results, viaGateway].map((r) => r.usage.prompt_tokens).sort(byCount));
    const states = await replicaStates(EMBED_POOL);
    // Ejected by its refusal (or by a failed health check, whichever came first).
    expect(states[2], JSON.stringify(states)).toMatchObject({ healthy: false, inFlight: 0 });
  });
});
