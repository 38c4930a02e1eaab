import type OpenAI from "openai";
import { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { encodeAudio, ffmpegPath } from "../../src/media/ffmpeg.js";
import { floatToPcm16, wavHeader } from "../../src/media/pcm.js";
import { getBalances } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { testTempDir } from "../helpers/tempDir.js";
import { startTestServer, tinyKokoroEntry, tinyWhisperEntry, type TestServer } from "../helpers/testServer.js";

/** $0.0001 per audio second. */
const PRICED = { pricing: { per_audio_second: { usd: 0.0001, diem: 0.0001 } } };

let server: TestServer;
/** A spoken sample made by Hearth's own text-to-speech, as WAV and MP3. */
let spokenWav: Buffer;
let spokenMp3: Buffer;

beforeAll(async () => {
  server = await startTestServer({
    models: [
      tinyKokoroEntry(),
      tinyWhisperEntry(PRICED),
      tinyWhisperEntry({ id: "openai/whisper-large-v3", name: "Tiny Whisper under the reference's id" }),
      tinyWhisperEntry({ id: "whisper-one-second", transcription: { maxAudioSeconds: 1 } }),
    ],
    config: { maxUploadMb: 0.5 },
  });
  const speech = (format: string) =>
    server.openai().audio.speech.create({ model: "tts-kokoro", voice: "af_heart", input: "Hello there. Hearth is transcribing its own voice.", response_format: format } as never);
  spokenWav = Buffer.from(await (await speech("wav")).arrayBuffer());
  spokenMp3 = Buffer.from(await (await speech("mp3")).arrayBuffer());
});
afterAll(() => server.stop());

const transcribe = async (client: OpenAI, body: Record<string, unknown>, audio = spokenWav, name = "speech.wav") =>
  client.audio.transcriptions.create({ model: "tiny-whisper", file: await toFile(audio, name), ...body } as never) as Promise<unknown>;

/** Raw multipart request (for the reference's own fields and for malformed uploads). */
async function upload(fields: Record<string, string>, file: { data: Buffer; name: string } | null, key: string | null = server.adminKey) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file) form.append("file", new Blob([new Uint8Array(file.data)]), file.name);
  return fetch(`${server.baseUrl}/audio/transcriptions`, { method: "POST", headers: key ? { authorization: `Bearer ${key}` } : {}, body: form });
}

describe("POST /audio/transcriptions with the openai client", () => {
  it("json: the text, the duration, usage and the cost", async () => {
    const result = (await transcribe(server.openai(), { response_format: "json" })) as { text: string; duration: number; usage: unknown; cost: { usd: number } };
    expect(typeof result.text).toBe("string");
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.duration).toBeGreaterThan(2);
    expect(result.usage).toEqual({ type: "duration", seconds: Math.ceil(result.duration) });
    expect(result.cost.usd).toBeCloseTo(result.duration * 0.0001, 6);
  });

  it("conditions on prompt (the demo model, whose text ends at a fixed position, has no room left after one), charged as without it", async () => {
    const plain = (await transcribe(server.openai(), { response_format: "verbose_json" })) as { text: string; duration: number };
    const prompted = (await transcribe(server.openai(), { response_format: "verbose_json", prompt: "Hearth, transcribing its own voice." })) as {
      text: string;
      duration: number;
      segments: unknown[];
    };
    expect(plain.text).not.toBe("");
    expect(prompted).toMatchObject({ text: "", segments: [], duration: plain.duration });
  });

  it("text: the same transcript as plain text, cost in headers", async () => {
    const json = (await transcribe(server.openai(), {})) as { text: string };
    const { data, response } = await server
      .openai()
      .audio.transcriptions.create({ model: "tiny-whisper", file: await toFile(spokenWav, "speech.wav"), response_format: "text" } as never)
      .withResponse();
    expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(response.headers.get("x-service-cost-usd")).toMatch(/^0\.000\d+$/);
    expect(data).toBe(json.text);
  });

  it("srt and vtt: numbered cues and a WEBVTT header with timestamps", async () => {
    const srt = (await transcribe(server.openai(), { response_format: "srt" })) as string;
    expect(srt).toMatch(/^1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n.+\n/);
    const vtt = (await transcribe(server.openai(), { response_format: "vtt" })) as string;
    expect(vtt).toMatch(/^WEBVTT\n\n00:00:\d\d\.\d{3} --> 00:00:\d\d\.\d{3}\n.+\n/);
  });

  it("verbose_json: segments, and words when asked for both granularities", async () => {
    const result = (await transcribe(server.openai(), { response_format: "verbose_json", timestamp_granularities: ["word", "segment"] })) as {
      task: string;
      duration: number;
      text: string;
      segments: { id: number; start: number; end: number; text: string }[];
      words: { word: string; start: number; end: number }[];
    };
    expect(result.task).toBe("transcribe");
    expect(result.segments.length).toBeGreaterThan(0);
    expect(result.segments[0]).toMatchObject({ id: 0, start: 0 });
    expect(result.words.length).toBeGreaterThan(0);
    for (const w of result.words) {
      expect(w.end).toBeGreaterThanOrEqual(w.start);
      expect(w.end).toBeLessThanOrEqual(30);
    }
  });

  it("serves model ids with '/' (the reference's openai/whisper-large-v3), on /models/{id} too", async () => {
    const result = (await transcribe(server.openai(), { model: "openai/whisper-large-v3" })) as { text: string };
    expect(typeof result.text).toBe("string");
    const record = (await (await fetch(`${server.baseUrl}/models/openai/whisper-large-v3`)).json()) as { id: string; type: string };
    expect(record).toMatchObject({ id: "openai/whisper-large-v3", type: "asr" });
  });

  it("reads compressed uploads (MP3) and takes a language hint", async () => {
    const result = (await transcribe(server.openai(), { language: "en" }, spokenMp3, "speech.mp3")) as { text: string; duration: number };
    expect(result.duration).toBeGreaterThan(2);
    expect(typeof result.text).toBe("string");
  });
});

describe("uploads as clients send them", () => {
  it("reads a multipart body sent gzip-compressed (Content-Encoding) as it reads a plain one", async () => {
    const form = new FormData();
    form.append("model", "tiny-whisper");
    form.append("file", new Blob([new Uint8Array(spokenWav)]), "speech.wav");
    const encoded = new Request("http://localhost/", { method: "POST", body: form });
    const response = await fetch(`${server.baseUrl}/audio/transcriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}`, "content-type": encoded.headers.get("content-type")!, "content-encoding": "gzip" },
      body: gzipSync(Buffer.from(await encoded.arrayBuffer())),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { duration: number }).duration).toBeGreaterThan(2);
  });

  it("transcribes an M4A as phones write it, its index after the audio (from a pipe ffmpeg decoded none of it)", async () => {
    const dir = testTempDir("hearth-m4a-");
    writeFileSync(join(dir, "speech.wav"), spokenWav);
    const made = spawnSync(ffmpegPath(), ["-hide_banner", "-loglevel", "error", "-i", join(dir, "speech.wav"), "-c:a", "aac", "-y", join(dir, "memo.m4a")]);
    expect(made.status).toBe(0);
    const m4a = readFileSync(join(dir, "memo.m4a"));
    expect(m4a.indexOf("moov")).toBeGreaterThan(m4a.indexOf("mdat"));
    const result = (await transcribe(server.openai(), { response_format: "json" }, m4a, "memo.m4a")) as { duration: number };
    expect(result.duration).toBeGreaterThan(2);
  });
});

describe("the reference's fields and long audio", () => {
  it("timestamps=true adds segment and word timestamps to the json shape", async () => {
    const response = await upload({ model: "tiny-whisper", timestamps: "true" }, { data: spokenWav, name: "a.wav" });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { text: string; timestamps: { segment: unknown[]; word: unknown[] } };
    expect(body.timestamps.segment.length).toBeGreaterThan(0);
    expect(body.timestamps.word.length).toBeGreaterThan(0);
  });

  it("transcribes audio longer than one 30 s window window by window, as Whisper's seek loop does", async () => {
    const rate = 16000;
    const samples = Float32Array.from({ length: 70 * rate }, (_, i) => 0.3 * Math.sin((2 * Math.PI * (200 + (i % rate) / 40) * i) / rate));
    const mp3 = await encodeAudio(samples, rate, "mp3");
    const response = await upload({ model: "tiny-whisper", language: "en", response_format: "verbose_json" }, { data: mp3, name: "long.mp3" });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { duration: number; segments: { start: number; end: number; seek: number }[] };
    expect(body.duration).toBeGreaterThan(69);
    // The tiny model closes each window with a lone timestamp, so the loop moves a whole window on:
    // three windows, at 0, 30 and 60 s, each giving one segment with its window's seek.
    expect(body.segments.map((s) => s.seek)).toEqual([0, 3000, 6000]);
    for (const s of body.segments) {
      expect(s.start).toBeGreaterThanOrEqual(s.seek / 100);
      expect(s.end).toBeGreaterThan(s.start);
      expect(s.end).toBeLessThanOrEqual(Math.min(s.seek / 100 + 30, body.duration));
    }
  });

  it("returns empty text for empty audio, and a 200 for silence", async () => {
    const empty = await upload({ model: "tiny-whisper" }, { data: wavHeader(16000, 0), name: "empty.wav" });
    expect(empty.status).toBe(200);
    expect(((await empty.json()) as { text: string }).text).toBe("");
    const silence = floatToPcm16(new Float32Array(16000 * 2));
    const quiet = await upload({ model: "tiny-whisper" }, { data: Buffer.concat([wavHeader(16000, silence.length), silence]), name: "silence.wav" });
    expect(quiet.status).toBe(200);
    expect(typeof ((await quiet.json()) as { text: string }).text).toBe("string");
  });
});

describe("transcription errors", () => {
  it("413 for a file above the configured limit", async () => {
    const big = Buffer.alloc(600_000, 1);
    const response = await upload({ model: "tiny-whisper" }, { data: big, name: "big.wav" });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { code: string }).code).toBe("PAYLOAD_TOO_LARGE");
    const error = await transcribe(server.openai(), {}, big, "big.wav").catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
  });

  it("413 for audio longer than the model accepts, decoded no further than a second past it (its length is not known)", async () => {
    const response = await upload({ model: "whisper-one-second" }, { data: spokenWav, name: "spoken.wav" });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ error: "The audio is longer than 1 s; whisper-one-second accepts at most 1 s.", code: "PAYLOAD_TOO_LARGE" });
  });

  it("415 for bytes that are not audio, and for a body that is not multipart", async () => {
    const error = await transcribe(server.openai(), {}, Buffer.from("this is not audio at all, just text"), "fake.mp3").catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(415);
    const json = await fetch(`${server.baseUrl}/audio/transcriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-whisper" }),
    });
    expect(json.status).toBe(415);
  });

  it("bytes that are not audio are refused at once, not after the transcription ahead of them", async () => {
    // Half an hour of silence: a few KB of FLAC, many seconds of the tiny model's work.
    const long = await encodeAudio(new Float32Array(1800 * 16000), 16000, "flac");
    const leaving = new AbortController();
    const form = new FormData();
    form.append("model", "tiny-whisper");
    form.append("file", new Blob([new Uint8Array(long)]), "long.flac");
    const ahead = fetch(`${server.baseUrl}/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${server.adminKey}` }, body: form, signal: leaving.signal })
      .then(() => "the transcription ahead")
      .catch(() => "the transcription ahead, left");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const refusal = upload({ model: "tiny-whisper" }, { data: Buffer.from("this is not audio at all, just text"), name: "fake.mp3" });
    expect(await Promise.race([refusal.then((res) => res.status), ahead])).toBe(415);
    leaving.abort();
    expect(await ahead).toBe("the transcription ahead, left");
  });

  it("400s naming the field: missing file, bad format, bad temperature, unknown language", async () => {
    const field = async (response: Response) => Object.keys(((await response.json()) as { details: Record<string, unknown> }).details).filter((k) => k !== "_errors");
    const noFile = await upload({ model: "tiny-whisper" }, null);
    expect(noFile.status).toBe(400);
    expect(await field(noFile)).toEqual(["file"]);
    const badFormat = await upload({ model: "tiny-whisper", response_format: "xml" }, { data: spokenWav, name: "a.wav" });
    expect(await field(badFormat)).toEqual(["response_format"]);
    const badTemperature = await upload({ model: "tiny-whisper", temperature: "3" }, { data: spokenWav, name: "a.wav" });
    expect(await field(badTemperature)).toEqual(["temperature"]);
    const badLanguage = await upload({ model: "tiny-whisper", language: "xx" }, { data: spokenWav, name: "a.wav" });
    expect(badLanguage.status).toBe(400);
    expect(await field(badLanguage)).toEqual(["language"]);
    expect((await upload({ model: "tts-kokoro" }, { data: spokenWav, name: "a.wav" })).status).toBe(404);
  });
});

describe("billing", () => {
  it("charges per audio second, lists it in usage, and 402s when the audio costs more than the balance", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const result = (await transcribe(server.openai(key), {})) as { duration: number; cost: { usd: number } };
    const charged = 1_000_000 - getBalances(server.db, accountId).USD;
    expect(charged).toBe(Math.ceil((Math.ceil(result.duration * 1000) * 100) / 1000));
    expect(listUsage(server.db, accountId)[0]).toMatchObject({ endpoint: "/audio/transcriptions", model: "tiny-whisper", status: 200 });
    expect(listUsage(server.db, accountId)[0]!.audioSeconds).toBeCloseTo(result.duration, 2);

    const poor = server.createKey({ usd: 0.0001 });
    const error = await transcribe(server.openai(poor.key), {}).catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect(getBalances(server.db, poor.accountId).USD).toBe(100);
  });

  it("decodes a caller's audio no further than a second past what the caller can pay for", async () => {
    // A minute of silence is a few KB of FLAC, and 3.8 MB of samples once decoded.
    const minute = await encodeAudio(new Float32Array(60 * 16000), 16000, "flac");
    const refusal = async (usd: number) => {
      const { key, accountId } = server.createKey({ usd });
      const res = await upload({ model: "tiny-whisper" }, { data: minute, name: "minute.flac" }, key);
      expect(res.status).toBe(402);
      expect(getBalances(server.db, accountId).USD).toBe(usd * 1e6);
      return ((await res.json()) as { error: string }).error;
    };
    // $0.0005 pays for 5 s: 6 s are decoded and refused, not the minute ($0.006).
    expect(await refusal(0.0005)).toMatch(/can cost up to \$0\.000600 /);
    // Nothing to pay with: one second.
    expect(await refusal(0)).toMatch(/can cost up to \$0\.000100 /);
    // max_tokens is no lever here.
    expect(await refusal(0)).toMatch(/available\. Add credits\.$/);
    const { key } = server.createKey({ usd: 0.006 });
    expect((await upload({ model: "tiny-whisper", response_format: "json" }, { data: minute, name: "minute.flac" }, key)).status).toBe(200);
  });
});
