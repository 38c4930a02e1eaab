import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KokoroEngine } from "../../src/engines/kokoro/KokoroEngine.js";
import { probeMedia } from "../helpers/mediaProbe.js";
import { fileDurationSeconds } from "../helpers/audio.js";
import { getBalances, listLedgerEntries } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { engineOf, post, startTestServer, tinyKokoroEntry, tinyVitsEntry, type TestServer } from "../helpers/testServer.js";
import { countReservations } from "../../src/store/reservations.js";

/** $0.01 per thousand characters (0.02 DIEM): a 100-character input costs 1000 micros. */
const PRICED = { pricing: { per_thousand_characters: { usd: 0.01, diem: 0.02 } } };
const FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;
const CONTENT_TYPES = { mp3: "audio/mpeg", opus: "audio/opus", aac: "audio/aac", flac: "audio/flac", wav: "audio/wav", pcm: "audio/pcm" };
const CONTAINERS = { mp3: "mp3", opus: "ogg", aac: "aac", flac: "flac", wav: "wav" };
const SENTENCES = "Hello there. This is Hearth speaking. The quick brown fox jumps over the lazy dog. Streaming sends each sentence as soon as it is ready. Goodbye for now.";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ models: [tinyKokoroEntry(PRICED), tinyVitsEntry({ pricing: { per_thousand_characters: { usd: 0.01, diem: 0.01 } } })] });
});
afterAll(() => server.stop());

const speak = (client: OpenAI, body: Record<string, unknown>) =>
  client.audio.speech.create({ model: "tts-kokoro", voice: "af_heart", input: "Hello world. This is a test.", ...body } as never);

describe("POST /audio/speech with the openai client", () => {
  it.each(FORMATS)("returns %s audio with its content type, a real container and a duration", async (format) => {
    const response = await speak(server.openai(), { response_format: format });
    expect(response.headers.get("content-type")).toBe(CONTENT_TYPES[format]);
    const audio = Buffer.from(await response.arrayBuffer());
    expect(Number(response.headers.get("content-length"))).toBe(audio.length);
    if (format === "pcm") {
      // Raw 16-bit mono at 24 kHz: the tiny Kokoro gives 50 ms per phoneme token.
      expect(audio.length % 2).toBe(0);
      expect(audio.length / 2 / 24000).toBeGreaterThan(0.5);
      return;
    }
    const info = probeMedia(audio);
    expect(info.container).toBe(CONTAINERS[format]);
    expect(info.streams[0]?.kind).toBe("audio");
    expect(info.durationSeconds).toBeGreaterThan(0.5);
    // A whole file's own headers give its duration, as a player reads it from disk (FLAC's
    // STREAMINFO once said N/A: ffmpeg wrote it to a pipe with the sample count unknown).
    expect(fileDurationSeconds(audio, CONTAINERS[format])).toBeCloseTo(info.durationSeconds!, 0);
  });

  it("speaks more slowly at speed 0.5 and faster at 2 (Kokoro takes speed as a model input)", async () => {
    const seconds = async (speed: number) => (await (await speak(server.openai(), { response_format: "pcm", speed })).arrayBuffer()).byteLength / 48000;
    const normal = await seconds(1);
    expect(await seconds(0.5)).toBeCloseTo(normal * 2, 1);
    expect(await seconds(2)).toBeCloseTo(normal / 2, 1);
  });

  it("gives different voices different audio, and uses the model's default voice when none is named", async () => {
    const bytes = async (voice?: string) => Buffer.from(await (await speak(server.openai(), { response_format: "pcm", voice })).arrayBuffer());
    const heart = await bytes("af_heart");
    expect(heart.equals(await bytes("am_adam"))).toBe(false);
    expect(heart.equals(await bytes(undefined))).toBe(true);
  });

  it("runs the VITS engine through transformers.js (16 kHz, time-stretched for speed)", async () => {
    const response = await speak(server.openai(), { model: "tts-vits", voice: "default", response_format: "wav" });
    const info = probeMedia(Buffer.from(await response.arrayBuffer()));
    expect(info.streams[0]).toMatchObject({ kind: "audio", sampleRate: 16000 });
    const normal = info.durationSeconds!;
    const fast = probeMedia(Buffer.from(await (await speak(server.openai(), { model: "tts-vits", voice: "default", response_format: "wav", speed: 2 })).arrayBuffer()));
    expect(fast.durationSeconds!).toBeCloseTo(normal / 2, 1);
    // pcm is 24 kHz whatever the model's rate.
    const pcm = await (await speak(server.openai(), { model: "tts-vits", voice: "default", response_format: "pcm" })).arrayBuffer();
    expect(pcm.byteLength / 48000).toBeCloseTo(normal, 1);
  });

  it("accepts parameters the model does not advertise and ignores them", async () => {
    const response = await speak(server.openai(), { prompt: "Very happy.", temperature: 0.9, top_p: 0.5, language: "English", instructions: "ignored too" });
    expect(response.status).toBe(200);
  });
});

describe("streaming speech", () => {
  it("delivers the first audio before the full text is synthesised (chunked, sentence by sentence)", async () => {
    const engine = (await engineOf(server, "tts-kokoro", "speech")) as KokoroEngine;
    const original = engine.synthesize.bind(engine);
    const finished: number[] = [];
    // Each sentence takes 150 ms longer than the tiny model needs, as a real model would: the order of events is then unambiguous.
    engine.synthesize = async (options) => {
      const samples = await original(options);
      await new Promise((r) => setTimeout(r, 150));
      finished.push(performance.now());
      return samples;
    };
    try {
      const response = await speak(server.openai(), { input: SENTENCES, response_format: "mp3", streaming: true });
      expect(response.headers.get("content-type")).toBe("audio/mpeg");
      expect(response.headers.get("transfer-encoding")).toBe("chunked");
      expect(response.headers.get("content-length")).toBeNull();
      const reader = response.body!.getReader();
      const chunks: Buffer[] = [];
      let firstChunkAt: number | undefined;
      let sentencesDoneAtFirstChunk = 0;
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        if (firstChunkAt === undefined) {
          firstChunkAt = performance.now();
          sentencesDoneAtFirstChunk = finished.length;
        }
        chunks.push(Buffer.from(next.value));
      }
      expect(finished).toHaveLength(5);
      // The first bytes came while at most two of five sentences were done, well before the last one finished.
      expect(sentencesDoneAtFirstChunk).toBeLessThanOrEqual(2);
      expect(firstChunkAt!).toBeLessThan(finished.at(-1)! - 300);
      expect(chunks.length).toBeGreaterThan(2);
      const info = probeMedia(Buffer.concat(chunks));
      expect(info.container).toBe("mp3");
      expect(info.durationSeconds).toBeGreaterThan(5);
    } finally {
      engine.synthesize = original;
    }
  });

  it.each(FORMATS)("streams %s that decodes as one valid file", async (format) => {
    const response = await speak(server.openai(), { input: SENTENCES, response_format: format, streaming: true });
    expect(response.headers.get("content-type")).toBe(CONTENT_TYPES[format]);
    const audio = Buffer.from(await response.arrayBuffer());
    const whole = Buffer.from(await (await speak(server.openai(), { input: SENTENCES, response_format: "pcm" })).arrayBuffer());
    const expectedSeconds = whole.length / 48000;
    if (format === "pcm") {
      expect(audio.equals(whole)).toBe(true);
      return;
    }
    const info = probeMedia(audio);
    expect(info.container).toBe(CONTAINERS[format]);
    expect(info.durationSeconds!).toBeGreaterThan(expectedSeconds - 0.2);
    expect(info.durationSeconds!).toBeLessThan(expectedSeconds + 0.3);
  });

  it("accepts the standard's stream_format 'audio' as streaming and 'sse' as events, and refuses others naming the field", async () => {
    const response = await post(server, "/audio/speech", { model: "tts-kokoro", input: "Hi there.", stream_format: "audio", response_format: "wav" });
    expect(response.headers.get("transfer-encoding")).toBe("chunked");
    await response.arrayBuffer();
    const sse = await post(server, "/audio/speech", { model: "tts-kokoro", input: "Hi.", stream_format: "sse" });
    expect(sse.status).toBe(200);
    expect(sse.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(await sse.text()).toMatch(/"type":"speech\.audio\.done"/);
    const bogus = await post(server, "/audio/speech", { model: "tts-kokoro", input: "Hi.", stream_format: "ogg" });
    expect(bogus.status).toBe(400);
    expect(((await bogus.json()) as { details: Record<string, unknown> }).details).toHaveProperty("stream_format");
  });
});

describe("speech errors", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["empty input", { input: "" }, "input"],
    ["input over 4096 characters", { input: "a".repeat(4097) }, "input"],
    ["speed below 0.25", { speed: 0.2 }, "speed"],
    ["speed above 4", { speed: 4.5 }, "speed"],
    ["unknown format", { response_format: "ogg" }, "response_format"],
    ["voice over 512 characters", { voice: "v".repeat(513) }, "voice"],
    ["style prompt over 500 characters", { prompt: "p".repeat(501) }, "prompt"],
    ["one-letter language", { language: "e" }, "language"],
    ["temperature above 2", { temperature: 2.5 }, "temperature"],
    ["top_p above 1", { top_p: 1.5 }, "top_p"],
    ["streaming not a boolean", { streaming: "yes" }, "streaming"],
  ];
  it.each(cases)("%s is a 400 naming the field", async (_name, patch, field) => {
    const response = await post(server, "/audio/speech", { model: "tts-kokoro", input: "Hello.", ...patch });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: string; details: Record<string, unknown> };
    expect(body.error).toContain(field);
    expect(body.details).toHaveProperty(field);
  });

  it("counts the 4096-character limit in characters, not UTF-16 units", async () => {
    const response = await post(server, "/audio/speech", { model: "tts-kokoro", input: "😀".repeat(4096), response_format: "pcm" });
    expect(response.status).toBe(200);
  });

  it("answers 400 for a voice the model does not have, listing its voices", async () => {
    const error = await speak(server.openai(), { voice: "af_sky" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/af_sky.*af_heart, af_bella, am_adam, bf_emma, bm_george/);
    const raw = await post(server, "/audio/speech", { model: "tts-kokoro", input: "Hi.", voice: "af_sky" });
    expect(((await raw.json()) as { details: Record<string, unknown> }).details).toHaveProperty("voice");
  });

  it("answers 404 for an unknown model or a non-speech model, 415 for a non-JSON body", async () => {
    expect((await post(server, "/audio/speech", { model: "nope", input: "Hi." })).status).toBe(404);
    const text = await fetch(`${server.baseUrl}/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "text/plain" },
      body: "hi",
    });
    expect(text.status).toBe(415);
    // No credentials at all on a paid endpoint: the x402 discovery answer.
    expect((await post(server, "/audio/speech", { input: "Hi." }, { key: null })).status).toBe(402);
  });
});

describe("models and voices", () => {
  it("lists speech models with voices and capabilities under /models?type=tts", async () => {
    const list = (await (await fetch(`${server.baseUrl}/models?type=tts`)).json()) as { data: any[] };
    expect(list.data.map((m) => m.id)).toEqual(["tts-kokoro", "tts-vits"]);
    const kokoro = list.data[0].model_spec;
    expect(kokoro.voices).toEqual(["af_heart", "af_bella", "am_adam", "bf_emma", "bm_george"]);
    // The reference's capability flags (none of them a speech model's); the speech flags sit on model_spec.
    expect(kokoro.capabilities).toMatchObject({ supportsFunctionCalling: false, supportsVision: false, quantization: "not-available" });
    expect(kokoro).toMatchObject({ supportsPromptParam: false, supportsTemperatureParam: false, supportsTopPParam: false });
    expect(kokoro.voice_cloning).toEqual({ mode: "persistent", accepted_formats: ["mp3", "wav", "flac", "m4a", "ogg", "webm", "aac"], min_sample_seconds: 5, retention_days: 30 });
    expect(kokoro.supports_custom_voice_id).toBe(false);
    expect(kokoro.supported_formats).toEqual(FORMATS);
    expect(kokoro.default_format).toBe("mp3");
    expect(kokoro.pricing).toEqual(PRICED.pricing);
    expect(list.data[1].model_spec.voices).toEqual(["default"]);
    expect(list.data[1].model_spec.voice_cloning).toBeUndefined();
    // A single-speaker VITS model says every standard voice with its one speaker.
    expect(Object.values(list.data[1].model_spec.voice_aliases)).toEqual(Array(13).fill("default"));
    const vits = await post(server, "/audio/speech", { model: "tts-vits", input: "Hi.", voice: "nova", response_format: "pcm" });
    expect(vits.status).toBe(200);
    expect((await vits.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  it("lists one model's voices under /models/{id}", async () => {
    const record = (await (await fetch(`${server.baseUrl}/models/tts-kokoro`)).json()) as any;
    expect(record).toMatchObject({ id: "tts-kokoro", type: "tts", model_spec: { voices: ["af_heart", "af_bella", "am_adam", "bf_emma", "bm_george"], default_voice: "af_heart" } });
    expect((await fetch(`${server.baseUrl}/models/no/such/model`)).status).toBe(404);
  });
});

describe("billing", () => {
  it("charges per character, with cost and balance headers on the audio response", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const input = `${"x".repeat(50)}. ${"y".repeat(48)}`;
    const response = await speak(server.openai(key), { input, response_format: "wav" });
    await response.arrayBuffer();
    expect(response.headers.get("x-service-balance-usd")).toBe("1.000000");
    expect(response.headers.get("x-service-cost-usd")).toBe("0.001000");
    expect(response.headers.get("x-service-cost-diem")).toBe("0.000000");
    expect(response.headers.get("x-service-model-id")).toBe("tts-kokoro");
    expect(response.headers.get("x-ratelimit-limit-requests")).toBe("60");
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 1000);
    const [row] = listUsage(server.db, accountId);
    expect(row).toMatchObject({ endpoint: "/audio/speech", model: "tts-kokoro", status: 200, characters: 100 });
    const ledger = listLedgerEntries(server.db, { accountId, kind: "charge" }).map(({ sku, units, deltaMicros }) => ({ sku, units, micros: -deltaMicros }));
    expect(ledger).toEqual([{ sku: "tts-kokoro-tts-kchar", units: 0.1, micros: 1000 }]);
  });

  it("announces the full cost on a stream and sends the charged cost as trailers", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const response = await post(server, "/audio/speech", { model: "tts-kokoro", input: SENTENCES, response_format: "opus", streaming: true }, { key });
    expect(response.headers.get("trailer")).toMatch(/x-service-cost-usd/);
    const expectedMicros = Math.ceil(SENTENCES.length * 10);
    expect(response.headers.get("x-service-cost-usd")).toBe((expectedMicros / 1e6).toFixed(6));
    await response.arrayBuffer();
    expect(1_000_000 - getBalances(server.db, accountId).USD).toBe(expectedMicros);
  });

  it("refuses with 402 when the balance does not cover the input, charging nothing", async () => {
    const { key, accountId } = server.createKey({ usd: 0.000005 });
    const response = await post(server, "/audio/speech", { model: "tts-kokoro", input: "This costs more than five micro-dollars." }, { key });
    expect(response.status).toBe(402);
    expect(((await response.json()) as { code: string }).code).toBe("INSUFFICIENT_BALANCE");
    expect(getBalances(server.db, accountId).USD).toBe(5);
  });

  it.each([
    ["raw audio", { streaming: true }],
    ["events", { stream_format: "sse" }],
  ])("a client that leaves mid-stream (%s) pays once for the sentences synthesised, not the rest", async (_, streamOptions) => {
    const engine = (await engineOf(server, "tts-kokoro", "speech")) as KokoroEngine;
    const original = engine.synthesize.bind(engine);
    engine.synthesize = async (options) => {
      const samples = await original(options);
      await new Promise((r) => setTimeout(r, 200));
      return samples;
    };
    try {
      const { key, accountId } = server.createKey({ usd: 1 });
      const response = await post(server, "/audio/speech", { model: "tts-kokoro", input: SENTENCES, response_format: "pcm", ...streamOptions }, { key });
      const reader = response.body!.getReader();
      await reader.read();
      await reader.cancel();
      let rows = listUsage(server.db, accountId);
      for (let i = 0; i < 100 && rows.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        rows = listUsage(server.db, accountId);
      }
      const [row] = rows;
      expect(row!.status).toBe(499);
      expect(row!.characters).toBeGreaterThan(0);
      expect(row!.characters).toBeLessThan(SENTENCES.length);
      expect(1_000_000 - getBalances(server.db, accountId).USD).toBe(Math.ceil(row!.characters! * 10));
      expect(listLedgerEntries(server.db, { accountId, kind: "charge" })).toHaveLength(1);
      expect(countReservations(server.db)).toBe(0);
    } finally {
      engine.synthesize = original;
    }
  });
});
