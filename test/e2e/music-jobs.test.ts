import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeAudio } from "../../src/media/ffmpeg.js";
import { probeMedia } from "../helpers/mediaProbe.js";
import { getJob } from "../../src/store/jobs.js";
import { getBalances } from "../../src/store/ledger.js";
import { listUsage } from "../../src/store/usage.js";
import { fileDurationSeconds } from "../helpers/audio.js";
import { tinyMusicgenEntry } from "../helpers/mediaModels.js";
import { post, startTestServer, tinyChatEntry, tinyKokoroEntry, type TestServer } from "../helpers/testServer.js";
import { jobRowOnceStatus, retrieveUntilDone } from "../helpers/video.js";

// $0.001 per second of music.
const PRICED = { pricing: { per_second: { usd: 0.001, diem: 0.001 } } };
const MODEL = "tiny-musicgen";
/** A file's duration may differ from the asked one by an encoder's rounding: 0.1 s, plus one 20 ms frame of the model. */
const TOLERANCE_SECONDS = 0.1 + 1 / 50;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    models: [tinyMusicgenEntry(PRICED), tinyMusicgenEntry({ id: "tiny-musicgen-no-loops", music: { loopCrossfadeSeconds: 0 } }), tinyKokoroEntry(), tinyChatEntry()],
  });
});
afterAll(() => server.stop());

const retrieve = (target: TestServer, key: string, queueId: string) => () => post(target, "/audio/retrieve", { model: MODEL, queue_id: queueId }, { key });

async function queue(target: TestServer, key: string, fields: Record<string, unknown>): Promise<string> {
  const res = await post(target, "/audio/queue", { model: MODEL, prompt: "calm lo-fi piano beat", ...fields }, { key });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { queue_id: string }).queue_id;
}

function rms(samples: Float32Array): number {
  let sum = 0;
  for (const x of samples) sum += x * x;
  return Math.sqrt(sum / samples.length);
}

describe("audio jobs: music", () => {
  it("GET /models lists the music model with the reference's music fields", async () => {
    const res = await fetch(`${server.baseUrl}/models?type=music`);
    const { data } = (await res.json()) as { data: Array<{ id: string; type: string; model_spec: Record<string, unknown> }> };
    expect(data.map((m) => m.id)).toEqual([MODEL, "tiny-musicgen-no-loops"]);
    expect(data[1]!.model_spec.supports_loop).toBe(false);
    expect(data[0]!.type).toBe("music");
    expect(data[0]!.model_spec).toMatchObject({
      supports_lyrics: false,
      lyrics_required: false,
      supports_force_instrumental: true,
      supports_loop: true,
      min_duration: 1,
      max_duration: 30,
      default_duration: 5,
      supported_formats: ["mp3", "wav", "flac", "opus", "aac"],
      default_format: "mp3",
      pricing: PRICED.pricing,
    });
  });

  it("quotes per second of music: the default duration, a numeric string; out of range and character_count are 400s naming the field", async () => {
    const quote = async (fields: Record<string, unknown>) => post(server, "/audio/quote", { model: MODEL, ...fields });
    expect(await (await quote({})).json()).toEqual({ quote: 0.005 });
    expect(await (await quote({ duration_seconds: 12 })).json()).toEqual({ quote: 0.012 });
    expect(await (await quote({ duration_seconds: "20" })).json()).toEqual({ quote: 0.02 });
    for (const [fields, name] of [
      [{ duration_seconds: 31 }, "duration_seconds"],
      [{ duration_seconds: 0 }, "duration_seconds"],
      [{ character_count: 100 }, "character_count"],
    ] as const) {
      const res = await quote(fields);
      expect(res.status, name).toBe(400);
      expect(JSON.stringify(await res.json()), name).toContain(name);
    }
  });

  it("plays a clip of the asked duration in WAV, FLAC and MP3, audible, charged once per job when queued", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const cases = [
      { format: "wav", seconds: 3, container: "wav", contentType: "audio/wav" },
      { format: "flac", seconds: 2, container: "flac", contentType: "audio/flac" },
      { format: "mp3", seconds: 4, container: "mp3", contentType: "audio/mpeg" },
    ];
    for (const { format, seconds, container, contentType } of cases) {
      const queueId = await queue(server, key, { duration_seconds: seconds, response_format: format, force_instrumental: true });
      const done = await retrieveUntilDone(retrieve(server, key, queueId), { timeoutMs: 60_000 });
      expect(done.contentType, format).toBe(contentType);
      const info = probeMedia(done.video);
      expect(info.container, format).toBe(container);
      expect(info.streams[0], format).toMatchObject({ kind: "audio", sampleRate: 32000 });
      // The file's own header carries the duration (what a player shows before decoding).
      expect(Math.abs(fileDurationSeconds(done.video, format)! - seconds), format).toBeLessThanOrEqual(TOLERANCE_SECONDS);
      const samples = await decodeAudio(done.video, 32000);
      expect(Math.abs(samples.length / 32000 - seconds), format).toBeLessThanOrEqual(TOLERANCE_SECONDS);
      expect(rms(samples), format).toBeGreaterThan(0.02);
    }
    // $0.001 a second for 3 + 2 + 4 seconds, nothing for retrieving.
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - 9_000);
    expect(listUsage(server.db, accountId).filter((row) => row.endpoint === "/audio/queue")).toHaveLength(3);
  });

  it("reports progress frame by frame while a longer clip generates", async () => {
    const { key } = server.createKey({ usd: 1 });
    const queueId = await queue(server, key, { duration_seconds: 30, response_format: "wav" });
    const done = await retrieveUntilDone(retrieve(server, key, queueId), { timeoutMs: 120_000, intervalMs: 100 });
    expect(done.progress.some((p) => p > 0 && p < 1)).toBe(true);
    expect(done.progress).toEqual([...done.progress].sort((a, b) => a - b));
    expect(fileDurationSeconds(done.video, "wav")).toBeCloseTo(30, 3);
  });

  it("loops: the clip keeps its duration and its end runs on into its start", async () => {
    const { key } = server.createKey({ usd: 1 });
    const queueId = await queue(server, key, { duration_seconds: 3, response_format: "wav", loop: true });
    const done = await retrieveUntilDone(retrieve(server, key, queueId), { timeoutMs: 60_000 });
    const samples = await decodeAudio(done.video, 32000);
    expect(samples.length).toBe(3 * 32000);
    // Across the seam (last sample -> first) the signal steps no more than it does between neighbours elsewhere.
    let largestStep = 0;
    for (let i = 1; i < samples.length; i++) largestStep = Math.max(largestStep, Math.abs(samples[i]! - samples[i - 1]!));
    expect(Math.abs(samples[0]! - samples.at(-1)!)).toBeLessThanOrEqual(largestStep);
  });

  it("answers what a music model cannot do with a 400 naming the field, and charges nothing for it", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const cases: [Record<string, unknown>, string][] = [
      [{ lyrics_prompt: "la la la" }, "lyrics_prompt"],
      [{ lyrics_optimizer: true }, "lyrics_optimizer"],
      [{ duration_seconds: 31 }, "duration_seconds"],
      [{ duration_seconds: "0" }, "duration_seconds"],
      [{ duration_seconds: 2.5 }, "duration_seconds"],
      [{ voice: "af_heart" }, "voice"],
      [{ language_code: "en" }, "language_code"],
      [{ speed: 1.5 }, "speed"],
      [{ response_format: "pcm" }, "response_format"],
      [{ prompt: "x".repeat(501) }, "prompt"],
    ];
    for (const [fields, name] of cases) {
      const res = await post(server, "/audio/queue", { model: MODEL, prompt: "calm piano", ...fields }, { key });
      expect(res.status, name).toBe(400);
      expect(JSON.stringify(await res.json()), name).toContain(name);
    }
    const noLoops = await post(server, "/audio/queue", { model: "tiny-musicgen-no-loops", prompt: "calm piano", loop: true }, { key });
    expect(noLoops.status).toBe(400);
    expect(JSON.stringify(await noLoops.json())).toContain("loop");
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000);
  });
});

describe("music jobs across restarts", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-music-jobs-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("a job interrupted by a shutdown runs again on the next start; one whose model is gone fails and is refunded exactly once", async () => {
    const first = await startTestServer({ dataDir, models: [tinyMusicgenEntry(PRICED)] });
    const { key, accountId } = first.createKey({ usd: 1 });
    const survivor = await queue(first, key, { duration_seconds: 2 });
    const doomed = await queue(first, key, { duration_seconds: 30 });
    expect(getBalances(first.db, accountId).USD).toBe(1_000_000 - 32_000);
    await first.stop();

    const second = await startTestServer({ dataDir, models: [tinyMusicgenEntry(PRICED)] });
    const done = await retrieveUntilDone(retrieve(second, key, survivor), { timeoutMs: 60_000 });
    expect(done.contentType).toBe("audio/mpeg");
    expect(Math.abs(fileDurationSeconds(done.video, "mp3")! - 2)).toBeLessThanOrEqual(TOLERANCE_SECONDS);
    // The 30-second clip takes a while: stop before it is done.
    expect(getJob(second.db, doomed)!.status).not.toBe("COMPLETED");
    await second.stop();

    const third = await startTestServer({ dataDir, models: [tinyChatEntry()] });
    const failed = await jobRowOnceStatus(third.db, doomed, "FAILED");
    expect(failed.status).toBe("FAILED");
    expect(failed.refundedAt).not.toBeNull();
    expect(getBalances(third.db, accountId).USD).toBe(1_000_000 - 2_000);
    await third.stop();

    const fourth = await startTestServer({ dataDir, models: [tinyMusicgenEntry(PRICED)] });
    const answer = await retrieve(fourth, key, doomed)();
    expect(answer.status).toBe(500);
    expect(await answer.json()).toMatchObject({ status: "FAILED", credits_refunded: true });
    expect(getBalances(fourth.db, accountId).USD).toBe(1_000_000 - 2_000);
    await fourth.stop();
  });
});
