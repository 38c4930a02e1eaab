import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AdminModelsResponse } from "../../src/api/admin/schema.js";
import { ModelEntry } from "../../src/config/modelRegistry.js";
import { probeMedia } from "../helpers/mediaProbe.js";
import { getBalances } from "../../src/store/ledger.js";
import { post, startTestServer, tinyKokoroEntry, type TestServer } from "../helpers/testServer.js";

/**
 * Two real Hearth nodes: the upstream serves tts-kokoro locally; the front relays its
 * tts-qwen3-0-6b entry to the upstream's tts-kokoro and keeps its own keys, limits and credits.
 */
let upstream: TestServer;
let front: TestServer;
let upstreamAccount: string;

const relayed = (overrides: Record<string, unknown>) =>
  ModelEntry.parse({
    id: "tts-qwen3-0-6b",
    type: "tts",
    backend: "upstream",
    speech: { voices: ["af_heart", "am_adam", "bf_missing"], supportsPromptParam: true, supportsTemperatureParam: true, supportsTopPParam: true },
    pricing: { per_thousand_characters: { usd: 0.02, diem: 0.02 } },
    ...overrides,
  });

beforeAll(async () => {
  upstream = await startTestServer({ models: [tinyKokoroEntry({ pricing: { per_thousand_characters: { usd: 0.01, diem: 0.01 } } })] });
  const nodeKey = upstream.createKey({ usd: 1 });
  upstreamAccount = nodeKey.accountId;
  front = await startTestServer({
    models: [
      relayed({ upstream: { baseUrl: upstream.baseUrl, apiKey: nodeKey.key, model: "tts-kokoro" } }),
      // Voices read from the upstream's GET /models/{id}.
      relayed({ id: "tts-orpheus", speech: {}, upstream: { baseUrl: upstream.baseUrl, apiKey: nodeKey.key, model: "tts-kokoro" } }),
      // No base URL (its variable is unset): not served at all.
      relayed({ id: "tts-chatterbox-hd", upstream: { baseUrlEnv: "HEARTH_TEST_UNSET_UPSTREAM_URL" } }),
      // An upstream that is down.
      relayed({ id: "tts-xai-v1", upstream: { baseUrl: "http://127.0.0.1:9/api/v1" } }),
      // A pool whose first replica is down.
      relayed({
        id: "tts-pool",
        upstream: { model: "tts-kokoro", replicas: [{ baseUrl: "http://127.0.0.1:9/api/v1" }, { baseUrl: upstream.baseUrl, apiKey: nodeKey.key }] },
      }),
    ],
  });
});
afterAll(async () => {
  await front?.stop();
  await upstream?.stop();
});

describe("speech relayed to an upstream server", () => {
  it("returns the upstream's audio through the openai client, in every format", async () => {
    for (const format of ["mp3", "wav", "opus"] as const) {
      const response = await front
        .openai()
        .audio.speech.create({ model: "tts-qwen3-0-6b", voice: "am_adam", input: "Hello from the upstream. Second sentence.", response_format: format } as never);
      expect(response.headers.get("x-service-model-router")).toMatch(/^upstream 127\.0\.0\.1:\d+$/);
      const info = probeMedia(Buffer.from(await response.arrayBuffer()));
      expect(info.streams[0]?.kind, format).toBe("audio");
      expect(info.durationSeconds, format).toBeGreaterThan(1);
    }
  });

  it("passes streaming through as the upstream sends it", async () => {
    const response = await post(front, "/audio/speech", { model: "tts-qwen3-0-6b", voice: "af_heart", input: "One. Two. Three. Four.", response_format: "mp3", streaming: true });
    expect(response.status).toBe(200);
    expect(response.headers.get("transfer-encoding")).toBe("chunked");
    expect(probeMedia(Buffer.from(await response.arrayBuffer())).container).toBe("mp3");
  });

  it("passes advertised parameters on (the upstream ignores what its model does not support)", async () => {
    const response = await post(front, "/audio/speech", { model: "tts-qwen3-0-6b", voice: "af_heart", input: "Hi.", prompt: "Very happy.", temperature: 0.7, top_p: 0.9 });
    expect(response.status).toBe(200);
  });

  it("bills the caller on the front node and the front's key on the upstream, each at its own price", async () => {
    const caller = front.createKey({ usd: 1 });
    const input = "a".repeat(100);
    const beforeUpstream = getBalances(upstream.db, upstreamAccount).USD;
    const response = await post(front, "/audio/speech", { model: "tts-qwen3-0-6b", voice: "af_heart", input, response_format: "pcm" }, { key: caller.key });
    await response.arrayBuffer();
    expect(response.headers.get("x-service-cost-usd")).toBe("0.002000");
    expect(1_000_000 - getBalances(front.db, caller.accountId).USD).toBe(2000);
    expect(beforeUpstream - getBalances(upstream.db, upstreamAccount).USD).toBe(1000);
  });

  it("400 for a voice outside the configured list, and the upstream's own 400 relayed for one it lacks", async () => {
    const local = await post(front, "/audio/speech", { model: "tts-qwen3-0-6b", voice: "nobody", input: "Hi." });
    expect(local.status).toBe(400);
    const relayedError = await post(front, "/audio/speech", { model: "tts-qwen3-0-6b", voice: "bf_missing", input: "Hi." });
    expect(relayedError.status).toBe(400);
    expect(((await relayedError.json()) as { error: string }).error).toMatch(/^Upstream: .*bf_missing/);
  });

  it("learns the voices from the upstream when none are configured", async () => {
    const ok = await post(front, "/audio/speech", { model: "tts-orpheus", voice: "bf_emma", input: "Hi.", response_format: "wav" });
    expect(ok.status).toBe(200);
    const record = (await (await fetch(`${front.baseUrl}/models/tts-orpheus`)).json()) as { model_spec: { voices: string[] } };
    expect(record.model_spec.voices).toEqual(["af_heart", "af_bella", "am_adam", "bf_emma", "bm_george"]);
  });

  it("leaves models without an upstream URL out of /models, and answers 503 naming the upstream when it cannot be reached", async () => {
    const list = (await (await fetch(`${front.baseUrl}/models?type=tts`)).json()) as { data: { id: string; model_spec: Record<string, unknown> }[] };
    expect(list.data.map((m) => m.id)).toEqual(["tts-qwen3-0-6b", "tts-orpheus", "tts-xai-v1", "tts-pool"]);
    expect(list.data[0]!.model_spec).toMatchObject({ supportsPromptParam: true, supportsTemperatureParam: true, supportsTopPParam: true });
    expect(front.models.skipped).toEqual([{ id: "tts-chatterbox-hd", reason: "HEARTH_TEST_UNSET_UPSTREAM_URL is not set" }]);
    expect((await post(front, "/audio/speech", { model: "tts-chatterbox-hd", input: "Hi." })).status).toBe(404);
    const down = await front
      .openai()
      .audio.speech.create({ model: "tts-xai-v1", voice: "af_heart", input: "Hi." } as never)
      .catch((e: unknown) => e);
    expect((down as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((down as Error).message, (down as Error).message).toMatch(/upstream speech server at 127\.0\.0\.1:\d+ could not be reached: \S/);
  });

  it("relays to a pool: a replica that is down is tried once, ejected, and the request served by the next", async () => {
    for (let i = 0; i < 3; i++) {
      const response = await post(front, "/audio/speech", { model: "tts-pool", voice: "af_heart", input: `Request ${i}.`, response_format: "wav" });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-service-model-router")).toBe("upstream pool of 2");
      expect(probeMedia(Buffer.from(await response.arrayBuffer())).container).toBe("wav");
    }
    const res = await fetch(`${front.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${front.adminKey}` } });
    const pool = ((await res.json()) as AdminModelsResponse).data.find((m) => m.id === "tts-pool")!;
    expect(pool.replicas).toMatchObject([
      { baseUrl: "http://127.0.0.1:9/api/v1", healthy: false, requests: 1, errors: 1, inFlight: 0 },
      { baseUrl: upstream.baseUrl, healthy: true, requests: 3, errors: 0, inFlight: 0 },
    ]);
    expect(pool.replicas![0]!.lastError).toMatch(/upstream speech server at 127\.0\.0\.1:9 could not be reached: \S/);
  });
});
