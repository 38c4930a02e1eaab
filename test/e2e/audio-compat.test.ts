import { deflateSync } from "node:zlib";
import { createOpenAI } from "@ai-sdk/openai";
import { AutoTokenizer } from "@huggingface/transformers";
import { experimental_transcribe as transcribe } from "ai";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeAudio } from "../../src/media/ffmpeg.js";
import { probeMedia } from "../helpers/mediaProbe.js";
import { getBalances, listLedgerEntries } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { post, startTestServer, tinyKokoroEntry, tinyWhisperEntry, type TestServer } from "../helpers/testServer.js";

/**
 * What the standard's clients send unchanged (the official openai SDK, the Vercel AI SDK):
 * standard model and voice names, verbose_json segments with decoder statistics, translations,
 * and the event-stream variants of speech and transcription.
 */

/** $0.01 per thousand characters; $0.0001 per audio second. */
const TTS_PRICE = { per_thousand_characters: { usd: 0.01, diem: 0.01 } };
const ASR_PRICE = { per_audio_second: { usd: 0.0001, diem: 0.0001 } };

let server: TestServer;
/** A spoken sample made by Hearth's own text-to-speech. */
let spoken: Buffer;

beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyKokoroEntry({ pricing: TTS_PRICE }),
      // A second speech model that claims tts-1-hd and maps alloy to a male voice.
      tinyKokoroEntry({ id: "tts-kokoro-hd", aliases: ["tts-1-hd"], traits: ["highest_quality"], speech: { voiceAliases: { alloy: "am_adam" } } }),
      tinyWhisperEntry({ pricing: ASR_PRICE }),
    ],
  });
  spoken = await speakBytes({ model: "tts-kokoro", voice: "af_heart", input: "Hello there. Hearth is transcribing its own voice." });
});
afterAll(() => server.stop());

async function speakBytes(body: Record<string, unknown>, client = server.openai()): Promise<Buffer> {
  const response = await client.audio.speech.create({ response_format: "wav", ...body } as never);
  return Buffer.from(await response.arrayBuffer());
}

/** The `data:` payloads of an event stream, [DONE] left out. */
async function readEvents(response: Response): Promise<any[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .map((block) =>
      block
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6))
        .join("\n"),
    )
    .filter((data) => data && data !== "[DONE]")
    .map((data) => JSON.parse(data));
}

describe("standard model and voice names", () => {
  it("tts-1 with voice alloy speaks with the default speech model in its mapped voice", async () => {
    const { data, response } = await server.openai().audio.speech.create({ model: "tts-1", voice: "alloy", input: "Hello world.", response_format: "wav" }).withResponse();
    expect(response.headers.get("x-service-model-id")).toBe("tts-kokoro");
    const audio = Buffer.from(await data.arrayBuffer());
    const info = probeMedia(audio);
    expect(info.container).toBe("wav");
    expect(info.durationSeconds).toBeGreaterThan(0.3);
    // Kokoro's default map: alloy -> af_heart on a model without af_alloy; onyx -> am_adam.
    expect(audio.equals(await speakBytes({ model: "tts-kokoro", voice: "af_heart", input: "Hello world." }))).toBe(true);
    expect(audio.equals(await speakBytes({ model: "tts-kokoro", voice: "am_adam", input: "Hello world." }))).toBe(false);
    expect(
      (await speakBytes({ model: "gpt-4o-mini-tts", voice: "onyx", input: "Hello world." })).equals(
        await speakBytes({ model: "tts-kokoro", voice: "am_adam", input: "Hello world." }),
      ),
    ).toBe(true);
    // The standard's custom voice object is read as its id.
    expect(
      (await speakBytes({ model: "tts-1", voice: { id: "af_bella" }, input: "Hello world." })).equals(
        await speakBytes({ model: "tts-kokoro", voice: "af_bella", input: "Hello world." }),
      ),
    ).toBe(true);
  });

  it("an alias in the registry wins over the default model, and a configured voice alias over the default map", async () => {
    const { data, response } = await server.openai().audio.speech.create({ model: "tts-1-hd", voice: "alloy", input: "Hello world.", response_format: "wav" }).withResponse();
    expect(response.headers.get("x-service-model-id")).toBe("tts-kokoro-hd");
    const audio = Buffer.from(await data.arrayBuffer());
    expect(audio.equals(await speakBytes({ model: "tts-kokoro-hd", voice: "am_adam", input: "Hello world." }))).toBe(true);
  });

  it("GET /models/traits and /models/compatibility_mapping list, per type, each trait's model and every other name a request may use", async () => {
    const get = async (path: string) => {
      const res = await fetch(`${server.baseUrl}${path}`);
      expect(res.status).toBe(200);
      return (await res.json()) as { object: string; type: string; data: Record<string, string> };
    };
    expect(await get("/models/traits?type=tts")).toEqual({ object: "list", type: "tts", data: { highest_quality: "tts-kokoro-hd" } });
    // The provider's default type is text: this node serves no text model, so the lists are empty, not a 404.
    expect(await get("/models/traits")).toEqual({ object: "list", type: "text", data: {} });
    expect(await get("/models/compatibility_mapping?type=tts")).toEqual({
      object: "list",
      type: "tts",
      data: { "tts-1-hd": "tts-kokoro-hd", "tts-1": "tts-kokoro", "gpt-4o-mini-tts": "tts-kokoro" },
    });
    expect((await get("/models/compatibility_mapping?type=asr")).data).toEqual({
      "whisper-1": "tiny-whisper",
      "gpt-4o-transcribe": "tiny-whisper",
      "gpt-4o-mini-transcribe": "tiny-whisper",
    });
    const bad = await fetch(`${server.baseUrl}/models/traits?type=poetry`);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("type");
  });

  it("GET /models shows each model's aliases and voice map", async () => {
    const list = (await (await fetch(`${server.baseUrl}/models?type=all`)).json()) as { data: any[] };
    const spec = (id: string) => list.data.find((m) => m.id === id).model_spec;
    expect(spec("tts-kokoro").aliases).toEqual(["tts-1", "gpt-4o-mini-tts"]);
    expect(spec("tts-kokoro-hd").aliases).toEqual(["tts-1-hd"]);
    expect(spec("tiny-whisper").aliases).toEqual(["whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe"]);
    expect(spec("tts-kokoro").voice_aliases).toMatchObject({ alloy: "af_heart", onyx: "am_adam", fable: "bm_george", ballad: "bm_george", nova: "af_bella", shimmer: "af_bella" });
    expect(spec("tts-kokoro-hd").voice_aliases.alloy).toBe("am_adam");
    for (const voice of Object.values(spec("tts-kokoro").voice_aliases)) expect(spec("tts-kokoro").voices).toContain(voice);
    expect(server.models.compatibilityMapping()).toContainEqual({ name: "tts-1-hd", model: "tts-kokoro-hd", type: "tts", source: "alias" });
    // A standard name resolves through /models/{id} too.
    expect(((await (await fetch(`${server.baseUrl}/models/whisper-1`)).json()) as { id: string }).id).toBe("tiny-whisper");
  });

  it("an unknown voice is still a 400 naming voice; a model of the wrong type a 404 that says which type", async () => {
    const error = await server
      .openai()
      .audio.speech.create({ model: "tts-1", voice: "nobody", input: "Hi." })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const raw = await post(server, "/audio/speech", { model: "tts-1", input: "Hi.", voice: "nobody" });
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as { details: Record<string, unknown> }).details).toHaveProperty("voice");
    const wrongType = await server
      .openai()
      .audio.transcriptions.create({ model: "tts-1", file: await toFile(spoken, "a.wav") })
      .catch((e: unknown) => e);
    expect(wrongType).toBeInstanceOf(OpenAI.NotFoundError);
    expect((wrongType as Error).message).toMatch(/tts-1.*does not exist as an ASR model/);
  });
});

describe("speech as server-sent events", () => {
  it("speech.audio.delta events carry the encoded audio, speech.audio.done the usage and the charged cost", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const input = "Hello there. This is a streamed answer.";
    const response = await server.openai(key).audio.speech.create({ model: "tts-1", voice: "alloy", input, response_format: "mp3", stream_format: "sse" });
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("x-service-cost-usd")).toBe("0.000390");
    const events = await readEvents(response);
    const deltas = events.slice(0, -1);
    expect(deltas.length).toBeGreaterThan(0);
    for (const e of deltas) expect(Object.keys(e).sort()).toEqual(["audio", "type"]);
    expect(new Set(deltas.map((e) => e.type))).toEqual(new Set(["speech.audio.delta"]));
    const audio = Buffer.concat(deltas.map((e) => Buffer.from(e.audio, "base64")));
    const info = probeMedia(audio);
    expect(info.container).toBe("mp3");
    expect(info.durationSeconds).toBeGreaterThan(0.5);
    const done = events.at(-1);
    expect(done.type).toBe("speech.audio.done");
    expect(done.usage.input_tokens).toBe(input.length);
    expect(done.usage.output_tokens).toBeGreaterThan(0);
    expect(done.usage.total_tokens).toBe(done.usage.input_tokens + done.usage.output_tokens);
    expect(done.cost.usd).toBeCloseTo(0.00039, 9);
    expect(1_000_000 - getBalances(server.db, accountId).USD).toBe(390);
    expect(listUsage(server.db, accountId)).toMatchObject([{ endpoint: "/audio/speech", model: "tts-kokoro", status: 200, characters: input.length }]);
  });
});

describe("transcription the standard's way", () => {
  type Verbose = {
    task: string;
    language: string;
    duration: number;
    text: string;
    segments: {
      id: number;
      seek: number;
      start: number;
      end: number;
      text: string;
      tokens: number[];
      temperature: number;
      avg_logprob: number;
      compression_ratio: number;
      no_speech_prob: number;
    }[];
  };

  it("whisper-1 verbose_json: segments carry the decoder's tokens and statistics", async () => {
    const result = (await server
      .openai()
      .audio.transcriptions.create({ model: "whisper-1", file: await toFile(spoken, "speech.wav"), response_format: "verbose_json" })) as unknown as Verbose;
    expect(result.task).toBe("transcribe");
    expect(typeof result.language).toBe("string");
    expect(result.segments.length).toBeGreaterThan(0);
    // The model's own tokenizer, read from its directory (the engine runs on a worker thread).
    const tokenizer = await AutoTokenizer.from_pretrained(tinyWhisperEntry().file!);
    for (const s of result.segments) {
      expect(s.seek).toBe(0);
      // The tiny model's random text is improbable at every temperature (avg_logprob below -1), so
      // Whisper's fallback decodes each window again up to its last temperature.
      expect(s.temperature).toBe(1);
      expect(s.tokens.length).toBeGreaterThan(0);
      for (const t of s.tokens) expect(Number.isInteger(t)).toBe(true);
      // The token ids are the text: decoding them (timestamps skipped) gives the segment.
      expect(
        tokenizer
          .decode(s.tokens, { skip_special_tokens: true })
          .replace(/<\|[\d.]+\|>/g, "")
          .trim(),
      ).toBe(s.text);
      expect(s.avg_logprob).toBeLessThan(-1);
      expect(s.avg_logprob).toBeGreaterThan(-30);
      expect(s.no_speech_prob).toBeGreaterThanOrEqual(0);
      expect(s.no_speech_prob).toBeLessThanOrEqual(1);
      // One segment per window here, so the window's ratio is the segment's.
      const bytes = Buffer.from(s.text);
      expect(s.compression_ratio).toBeCloseTo(bytes.length / deflateSync(bytes).length, 9);
    }
    // A sampling temperature is reported as used.
    const warm = (await server
      .openai()
      .audio.transcriptions.create({ model: "whisper-1", file: await toFile(spoken, "speech.wav"), response_format: "verbose_json", temperature: 0.5 })) as unknown as Verbose;
    expect(warm.segments.every((s) => s.temperature === 0.5)).toBe(true);
  });

  it("stream: true yields text deltas, then done with the same text as a plain request, the usage and the cost", async () => {
    const plain = await server.openai().audio.transcriptions.create({ model: "whisper-1", file: await toFile(spoken, "speech.wav") });
    const { key, accountId } = server.createKey({ usd: 1 });
    const stream = await server.openai(key).audio.transcriptions.create({ model: "whisper-1", file: await toFile(spoken, "speech.wav"), stream: true });
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    const done = events.at(-1);
    expect(done.type).toBe("transcript.text.done");
    const deltas = events.slice(0, -1);
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.every((e) => e.type === "transcript.text.delta")).toBe(true);
    expect(deltas.map((e) => e.delta).join("")).toBe(done.text);
    expect(done.text).toBe(plain.text);
    expect(done.usage.type).toBe("tokens");
    expect(done.usage.output_tokens).toBeGreaterThan(0);
    expect(done.usage.total_tokens).toBe(done.usage.input_tokens + done.usage.output_tokens);
    const duration = (plain as unknown as { duration: number }).duration;
    expect(done.cost.usd).toBeCloseTo(duration * 0.0001, 6);
    // Charged once, for the whole audio.
    const charged = 1_000_000 - getBalances(server.db, accountId).USD;
    expect(charged).toBe(Math.round(done.cost.usd * 1e6));
    expect(listUsage(server.db, accountId)).toMatchObject([{ endpoint: "/audio/transcriptions", status: 200 }]);
    // Refused before the first event: a real status, no stream, no cost header, nothing charged.
    const poor = server.createKey({ usd: 0.000001 });
    const form = new FormData();
    form.append("stream", "true");
    form.append("file", new Blob([new Uint8Array(spoken)]), "a.wav");
    const refused = await fetch(`${server.baseUrl}/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${poor.key}` }, body: form });
    expect(refused.status).toBe(402);
    expect(refused.headers.get("content-type")).toMatch(/^application\/json/);
    expect(refused.headers.get("x-service-cost-usd")).toBeNull();
    expect(getBalances(server.db, poor.accountId).USD).toBe(1);
  });

  it("a stream the client leaves after the first delta is charged once, for the audio its decoded segments covered", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const rate = 16000;
    // 70 s: three 30 s windows, one segment each from the tiny model.
    const samples = Float32Array.from({ length: 70 * rate }, (_, i) => 0.3 * Math.sin((2 * Math.PI * (200 + (i % rate) / 40) * i) / rate));
    const form = new FormData();
    form.append("model", "whisper-1");
    form.append("language", "en");
    form.append("stream", "true");
    form.append("file", new Blob([new Uint8Array(await encodeAudio(samples, rate, "mp3"))]), "long.mp3");
    // The same file in one piece: where its first two windows' segments end (a transcript is the same every time).
    const whole = (await server.openai().audio.transcriptions.create({
      model: "whisper-1",
      language: "en",
      file: await toFile(await encodeAudio(samples, rate, "mp3"), "long.mp3"),
      response_format: "verbose_json",
    })) as unknown as Verbose;
    const chargeUpTo = (windowStart: number) => Math.round(100 * Math.max(...whole.segments.filter((s) => s.start >= windowStart && s.start < windowStart + 30).map((s) => s.end)));
    const abort = new AbortController();
    const response = await fetch(`${server.baseUrl}/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form, signal: abort.signal });
    expect(response.status).toBe(200);
    // The whole audio (70 s and the MP3 encoder's padding) is announced up front.
    expect(Number(response.headers.get("x-service-cost-usd"))).toBeGreaterThanOrEqual(0.007);
    expect(Number(response.headers.get("x-service-cost-usd"))).toBeLessThan(0.0072);
    const reader = response.body!.getReader();
    let received = "";
    while (!received.includes("transcript.text.delta")) received += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    const deadline = Date.now() + 20_000;
    while (listUsage(server.db, accountId).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(listUsage(server.db, accountId)).toMatchObject([{ endpoint: "/audio/transcriptions", status: 499 }]);
    const charges = listLedgerEntries(server.db, { accountId, kind: "charge" }).map((c) => ({ micros: -c.deltaMicros }));
    expect(charges).toHaveLength(1);
    // The charge stops at the end of the first window's segments (the client left) or the second's
    // (decoded while the abort travelled), never the whole 70 s.
    expect([chargeUpTo(0), chargeUpTo(30)]).toContain(charges[0]!.micros);
    expect(chargeUpTo(30)).toBeLessThan(7000);
    expect(1_000_000 - getBalances(server.db, accountId).USD).toBe(charges[0]!.micros);
  });

  it("audio.translations.create answers English text in every format, billed like a transcription", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const client = server.openai(key);
    const { data, response } = await client.audio.translations.create({ model: "whisper-1", file: await toFile(spoken, "speech.wav") }).withResponse();
    expect(typeof data.text).toBe("string");
    expect(data.text.length).toBeGreaterThan(0);
    expect(response.headers.get("x-service-model-id")).toBe("tiny-whisper");
    const verbose = (await client.audio.translations.create({
      model: "whisper-1",
      file: await toFile(spoken, "speech.wav"),
      response_format: "verbose_json",
    })) as unknown as Verbose;
    expect(verbose.task).toBe("translate");
    expect(verbose.text).toBe(data.text);
    expect(verbose.segments[0]!.tokens.length).toBeGreaterThan(0);
    const srt = (await client.audio.translations.create({ model: "whisper-1", file: await toFile(spoken, "speech.wav"), response_format: "srt" })) as unknown as string;
    expect(srt).toMatch(/^1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n.+\n/);
    const perRequest = Math.ceil(verbose.duration * 1000) * 0.1;
    expect(1_000_000 - getBalances(server.db, accountId).USD).toBeCloseTo(3 * perRequest, -1);
    expect(listUsage(server.db, accountId).map((r) => r.endpoint)).toEqual(["/audio/translations", "/audio/translations", "/audio/translations"]);
    // No stream for translations: a 400 naming the field.
    const form = new FormData();
    form.append("stream", "true");
    form.append("file", new Blob([new Uint8Array(spoken)]), "a.wav");
    const refused = await fetch(`${server.baseUrl}/audio/translations`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { details: Record<string, unknown> }).details).toHaveProperty("stream");
  });

  it("the Vercel AI SDK's experimental_transcribe with segment timestamps", async () => {
    const openai = createOpenAI({ baseURL: server.baseUrl, apiKey: server.adminKey });
    const result = await transcribe({
      model: openai.transcription("whisper-1"),
      audio: new Uint8Array(spoken),
      providerOptions: { openai: { timestampGranularities: ["segment"] } },
    });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.segments.length).toBeGreaterThan(0);
    expect(result.segments[0]!.startSecond).toBe(0);
    expect(result.segments[0]!.endSecond).toBeGreaterThan(0);
    expect(result.durationInSeconds).toBeGreaterThan(2);
  });
});
