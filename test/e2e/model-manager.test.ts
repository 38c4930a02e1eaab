import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadModelsConfig } from "../../src/models/loadModelsConfig.js";
import { ServerConfig } from "../../src/config/serverSettings.js";
import { createLogger } from "../../src/logger.js";
import { estimateMemory } from "../../src/models/estimateMemory.js";
import type { ModelChange } from "../../src/models/ModelManager.js";
import { startServer } from "../../src/server.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { hearth } from "../helpers/cli.js";
import { tinyImageEntry, tinyVideoEntry } from "../helpers/mediaModels.js";
import { fixturesDir, post, startTestServer, tinyChatEntry, tinyChatPath, tinyKokoroEntry, tinyReasoningEntry, type TestServer } from "../helpers/testServer.js";

const chat = (server: TestServer, model: string, content = "Hello", key?: string) =>
  server.openai(key).chat.completions.create({ model, messages: [{ role: "user", content }], max_tokens: 4, temperature: 0 });

async function adminModels(server: TestServer, key = server.adminKey) {
  const res = await fetch(`${server.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as any };
}
const stateOf = (body: any, id: string) => (body.data as any[]).find((m) => m.id === id);
const waitFor = async (check: () => boolean, ms = 5000) => {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe("lifecycle without a budget", () => {
  let server: TestServer;
  const changes: ModelChange[] = [];
  beforeAll(async () => {
    server = await startTestServer({
      models: [tinyChatEntry(), tinyReasoningEntry({ keepAlive: 1 }), tinyKokoroEntry(), tinyChatEntry({ id: "broken", file: join(fixturesDir(), "tiny-kokoro", "config.json") })],
      config: { keepAlive: -1 },
    });
    server.models.onChange((change) => changes.push(change));
  });
  afterAll(() => server.stop());

  it("loads a model on its first request, not before", async () => {
    const before = await adminModels(server);
    expect(before.status).toBe(200);
    expect(before.body.object).toBe("list");
    for (const id of ["tiny-chat", "tiny-reasoning", "tts-kokoro"]) expect(stateOf(before.body, id).state).toBe("unloaded");
    // Estimated before loading: GGUF from node-llama-cpp (weights + KV cache), ONNX from file sizes.
    expect(stateOf(before.body, "tiny-chat").memory.ramBytes).toBeGreaterThan(500_000);
    expect(stateOf(before.body, "tts-kokoro").memory.ramBytes).toBeGreaterThan(1_000_000);
    expect(before.body.budget).toEqual({ ram: { limitBytes: null, usedBytes: 0 }, vram: { limitBytes: null, usedBytes: 0 } });

    const completion = await chat(server, "tiny-chat");
    expect(completion.choices[0]!.message.content).toBeTypeOf("string");
    const after = await adminModels(server);
    const record = stateOf(after.body, "tiny-chat");
    expect(record).toMatchObject({ object: "model.status", type: "text", backend: "llama", state: "loaded", error: null, inFlight: 0, keepAliveSeconds: -1 });
    expect(record.queue).toEqual({ busy: 0, waiting: 0 });
    expect(record.loadedAt).toBeGreaterThan(0);
    expect(record.lastUsedAt).toBeGreaterThanOrEqual(record.loadedAt);
    expect(stateOf(after.body, "tts-kokoro").state).toBe("unloaded");
    expect(after.body.budget.ram.usedBytes).toBe(record.memory.ramBytes);
    expect(changes.filter((c) => c.ids.includes("tiny-chat")).map((c) => c.reason)).toEqual(expect.arrayContaining(["acquired", "loading", "loaded", "released"]));
  });

  it("unloads a model idle past its keep-alive, and loads it again on the next request", async () => {
    await chat(server, "tiny-reasoning");
    expect(server.models.statusOf("tiny-reasoning").state).toBe("loaded");
    expect(server.models.statusOf("tiny-reasoning").keepAliveSeconds).toBe(1);
    await waitFor(() => server.models.statusOf("tiny-reasoning").state === "unloaded", 4000);
    expect(changes.some((c) => c.ids.includes("tiny-reasoning") && c.reason === "idle")).toBe(true);
    // keepAlive -1 (the server default here): the other model stays.
    expect(server.models.statusOf("tiny-chat").state).toBe("loaded");
    await chat(server, "tiny-reasoning");
    expect(server.models.statusOf("tiny-reasoning").state).toBe("loaded");
  });

  it("answers a broken model with a 503 naming the cause, keeps serving the rest, shows the failure", async () => {
    const res = await post(server, "/chat/completions", { model: "broken", messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: string };
    expect(body.error).toMatch(/^The model "broken" could not be loaded: /);
    expect(body.error.length).toBeGreaterThan('The model "broken" could not be loaded: '.length + 5);
    expect((await chat(server, "tiny-chat")).choices).toHaveLength(1);
    const status = stateOf((await adminModels(server)).body, "broken");
    expect(status.state).toBe("failed");
    expect(body.error).toContain(status.error.replace(/^The model "broken" could not be loaded: /, ""));
    // Within the back-off the cause is repeated without loading again.
    const again = await post(server, "/chat/completions", { model: "broken", messages: [{ role: "user", content: "hi" }] });
    expect(again.status).toBe(503);
  });

  it("admin endpoints need an admin key; load and unload by hand", async () => {
    const account = createAccount(server.db, "inference only");
    const { secret } = createApiKey(server.db, { accountId: account.id, description: "inference", keyType: "INFERENCE" });
    expect((await adminModels(server, secret)).status).toBe(403);
    expect((await post(server, "/admin/models/tts-kokoro/load", {}, { key: secret })).status).toBe(403);
    expect((await post(server, "/admin/models/tts-kokoro/load", {}, { key: null })).status).toBe(401);

    const loaded = await post(server, "/admin/models/tts-kokoro/load", {});
    expect(loaded.status).toBe(200);
    expect(((await loaded.json()) as any).data).toMatchObject({ id: "tts-kokoro", state: "loaded", inFlight: 0 });
    const unloaded = await post(server, "/admin/models/tts-kokoro/unload", {});
    expect(unloaded.status).toBe(200);
    expect(((await unloaded.json()) as any).data.state).toBe("unloaded");
    expect((await post(server, "/admin/models/no-such-model/load", {})).status).toBe(404);
  });

  it("refuses to unload a model while a request holds it (409)", async () => {
    const lease = await server.models.acquire("tiny-chat", "chat");
    try {
      const res = await post(server, "/admin/models/tiny-chat/unload", {});
      expect(res.status).toBe(409);
      expect(((await res.json()) as any).error).toMatch(/serving 1 request/);
      expect(server.models.statusOf("tiny-chat")).toMatchObject({ state: "loaded", inFlight: 1 });
    } finally {
      lease.release();
    }
    expect((await post(server, "/admin/models/tiny-chat/unload", {})).status).toBe(200);
    expect(server.models.statusOf("tiny-chat").state).toBe("unloaded");
  });

  it("releases a streaming request's hold when the stream ends", async () => {
    const stream = await server.openai().chat.completions.create({ model: "tiny-chat", messages: [{ role: "user", content: "Count" }], max_tokens: 32, stream: true });
    let chunks = 0;
    for await (const _ of stream) chunks++;
    expect(chunks).toBeGreaterThan(1);
    await waitFor(() => server.models.statusOf("tiny-chat").inFlight === 0, 2000);
  });

  it("says when a prompt is longer than the model's context (400)", async () => {
    const small = await startTestServer({ models: [tinyChatEntry({ llama: { contextSize: 256, sequences: 1, threads: 1, gpuLayers: 0 } })] });
    try {
      const error = await chat(small, "tiny-chat", "word ".repeat(200)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/the prompt is \d+ tokens but this model's context holds 256/);
    } finally {
      await small.stop();
    }
  });
});

describe("a slow load", () => {
  it("never holds up another model's requests", async () => {
    // An upstream whose GET /models (read while its engine loads) answers only when told to.
    let answerModels!: () => void;
    const modelsAsked = new Promise<void>((asked) => {
      upstreamPeer = createServer((req, res) => {
        if (req.url?.endsWith("/models")) {
          asked();
          answerModels = () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ data: [] }));
        } else res.writeHead(503).end();
      });
    });
    await new Promise<void>((listening) => upstreamPeer.listen(0, "127.0.0.1", listening));
    const base = `http://127.0.0.1:${(upstreamPeer.address() as AddressInfo).port}/v1`;
    const server = await startTestServer({ models: [tinyChatEntry(), tinyChatEntry({ id: "slow", backend: "upstream", file: undefined, upstream: { baseUrl: base } })] });
    try {
      const slow = post(server, "/chat/completions", { model: "slow", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
      await modelsAsked;
      expect(server.models.statusOf("slow").state).toBe("loading");
      // The other model loads and answers while "slow" is still loading.
      const completion = await chat(server, "tiny-chat");
      expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
      expect(server.models.statusOf("slow").state).toBe("loading");
      answerModels();
      expect((await slow).status).toBe(503);
      expect(server.models.statusOf("slow").state).toBe("loaded");
    } finally {
      await server.stop();
      upstreamPeer.close();
    }
  });
});
let upstreamPeer: Server;

describe("memory budget", () => {
  let server: TestServer;
  let oneModel: number;
  beforeAll(async () => {
    const estimate = await estimateMemory(tinyChatEntry(), false);
    oneModel = estimate.ramBytes;
    // Room for one chat model, not two.
    server = await startTestServer({
      models: [tinyChatEntry(), tinyReasoningEntry()],
      config: { ramBudget: Math.floor(oneModel * 1.5), modelLoadWaitMs: 300 },
    });
  });
  afterAll(() => server.stop());

  it("evicts the least recently used idle model to make room", async () => {
    await chat(server, "tiny-chat");
    expect(server.models.statusOf("tiny-chat").state).toBe("loaded");
    await chat(server, "tiny-reasoning");
    expect(server.models.statusOf("tiny-reasoning").state).toBe("loaded");
    expect(server.models.statusOf("tiny-chat").state).toBe("unloaded");
    const { budget } = server.models.status();
    expect(budget.ram.usedBytes).toBeLessThanOrEqual(budget.ram.limitBytes!);
  });

  it("never evicts a model in use: the other load waits, then answers 503 saying why", async () => {
    const lease = await server.models.acquire("tiny-reasoning", "chat");
    let released = false;
    try {
      const res = await post(server, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error).toMatch(/tiny-chat.*memory budget is full.*tiny-reasoning.*busy/);
      expect(server.models.statusOf("tiny-reasoning")).toMatchObject({ state: "loaded", inFlight: 1 });
      // The held model still answers meanwhile.
      expect((await chat(server, "tiny-reasoning")).choices).toHaveLength(1);

      // A load that is waiting proceeds as soon as the holder lets go.
      const waiting = chat(server, "tiny-chat");
      // Let go only once the load is really waiting for room (it is "loading" while it waits).
      await waitFor(() => server.models.statusOf("tiny-chat").state === "loading");
      lease.release();
      released = true;
      expect((await waiting).choices).toHaveLength(1);
      expect(server.models.statusOf("tiny-chat").state).toBe("loaded");
      expect(server.models.statusOf("tiny-reasoning").state).toBe("unloaded");
    } finally {
      if (!released) lease.release();
    }
  });

  it("refuses a model larger than the whole budget", async () => {
    const tiny = await startTestServer({ models: [tinyChatEntry()], config: { ramBudget: 1024 } });
    try {
      const res = await post(tiny, "/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error).toMatch(/needs about .* of RAM and the RAM budget is 1\.0 KiB/);
    } finally {
      await tiny.stop();
    }
  });
});

describe("image and video on the same files", () => {
  it("share one loaded pipeline", async () => {
    const server = await startTestServer({ models: [tinyImageEntry(), tinyVideoEntry()] });
    try {
      const res = await post(server, "/image/generate", { model: "tiny-sd", prompt: "a red square", width: 64, height: 64 });
      expect(res.status).toBe(200);
      // Without a budget the estimate is made when asked for (the admin listing).
      await server.models.estimate();
      const image = server.models.statusOf("tiny-sd");
      const video = server.models.statusOf("tiny-video");
      expect(image).toMatchObject({ state: "loaded", sharedWith: ["tiny-video"] });
      expect(video).toMatchObject({ state: "loaded", sharedWith: ["tiny-sd"] });
      // Counted once against the budget.
      expect(server.models.budget().ram.usedBytes).toBe(image.memory!.ramBytes);
      const engine = server.models.loadedEngine("tiny-video");
      expect(engine?.kind).toBe("video");
    } finally {
      await server.stop();
    }
  });
});

describe("hearth models add and list", () => {
  it("documents the new flags in --help", async () => {
    const serve = await hearth(["serve", "--help"]);
    for (const word of ["--keep-alive", "HEARTH_KEEP_ALIVE", "--ram-budget", "HEARTH_RAM_BUDGET", "--vram-budget", "HEARTH_VRAM_BUDGET"]) expect(serve.stdout).toContain(word);
    const add = await hearth(["models", "add", "--help"]);
    for (const word of ["<path>", "--id", "--config", "--json"]) expect(add.stdout).toContain(word);
    const list = await hearth(["models", "list", "--help"]);
    for (const word of ["--url", "--key", "--json"]) expect(list.stdout).toContain(word);
  });

  it("writes entries for a GGUF file and an ONNX directory that then serve", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hearth-add-"));
    const configPath = join(dir, "models.config.json");
    const gguf = await hearth(["models", "add", tinyChatPath(), "--id", "added-chat", "--config", configPath]);
    expect(gguf.stderr).toBe("");
    expect(gguf.status).toBe(0);
    expect(gguf.stdout).toMatch(/text model for the llama backend/);
    expect(gguf.stdout).toMatch(/contextLength: 4096/);
    expect(gguf.stdout).toMatch(/chatTemplate: true/);
    const onnx = await hearth(["models", "add", join(fixturesDir(), "tiny-kokoro"), "--config", configPath, "--json"]);
    expect(onnx.status).toBe(0);
    const inspected = JSON.parse(onnx.stdout);
    expect(inspected).toMatchObject({ backend: "kokoro", type: "tts", entry: { id: "tiny-kokoro", backend: "kokoro", type: "tts" } });
    const duplicate = await hearth(["models", "add", tinyChatPath(), "--id", "added-chat", "--config", configPath]);
    expect(duplicate.status).toBe(2);
    expect(duplicate.stderr).toMatch(/already exists/);
    const notAModel = await hearth(["models", "add", join(fixturesDir(), "tiny-kokoro", "config.json"), "--config", configPath]);
    expect(notAModel.status).toBe(1);

    const written = JSON.parse(readFileSync(configPath, "utf8"));
    expect(written.models.map((m: { id: string }) => m.id)).toEqual(["added-chat", "tiny-kokoro"]);

    const offline = await hearth(["models", "list", "--config", configPath, "--data-dir", dir, "--json"]);
    expect(offline.status).toBe(0);
    const listed = JSON.parse(offline.stdout);
    expect(listed.models.find((m: any) => m.id === "added-chat").memory.ramBytes).toBeGreaterThan(0);

    // Keep the demo threads small on the test machine.
    written.models[0].llama = { threads: 1, contextSize: 512, sequences: 1, gpuLayers: 0 };
    writeFileSync(configPath, JSON.stringify(written));
    const running = await startServer(ServerConfig.parse({ host: "127.0.0.1", port: 0, dataDir: dir, configPath, logLevel: "silent" }), {
      modelsConfig: loadModelsConfig(configPath, dir),
      characters: [],
      gpu: false,
      logger: createLogger("silent"),
    });
    try {
      const account = createAccount(running.db, "admin");
      const { secret } = createApiKey(running.db, { accountId: account.id, description: "admin", keyType: "ADMIN", operator: true });
      const client = new OpenAI({ apiKey: secret, baseURL: running.baseUrl, maxRetries: 0 });
      const completion = await client.chat.completions.create({ model: "added-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
      expect(completion.model).toBe("added-chat");
      const speech = await fetch(`${running.baseUrl}/audio/speech`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "tiny-kokoro", input: "Hello there.", response_format: "wav" }),
      });
      expect(speech.status).toBe(200);

      const live = await hearth(["models", "list", "--url", running.baseUrl, "--key", secret, "--json"]);
      expect(live.status).toBe(0);
      const view = JSON.parse(live.stdout);
      expect(view.models.map((m: any) => [m.id, m.state])).toEqual([
        ["added-chat", "loaded"],
        ["tiny-kokoro", "loaded"],
      ]);
      expect(view.budget.ram.usedBytes).toBeGreaterThan(0);
      const table = await hearth(["models", "list", "--url", running.baseUrl, "--key", secret]);
      expect(table.stdout).toMatch(/added-chat\s+text\s+llama\s+loaded/);
      const denied = await hearth(["models", "list", "--url", running.baseUrl, "--key", "not-a-key"]);
      expect(denied.status).toBe(1);
      expect(denied.stderr).toMatch(/401/);
    } finally {
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
