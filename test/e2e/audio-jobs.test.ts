import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getBalances } from "../../src/store/ledger.js";
import { getJob } from "../../src/store/jobs.js";
import { listUsage } from "../../src/store/usage.js";
import { fileDurationSeconds } from "../helpers/audio.js";
import { post, startTestServer, tinyChatEntry, tinyKokoroEntry, type TestServer } from "../helpers/testServer.js";
import { jobRowOnceStatus, retrieveUntilDone } from "../helpers/video.js";

// $0.01 per thousand characters.
const PRICED = { pricing: { per_thousand_characters: { usd: 0.01, diem: 0.02 } } };
const SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank. ";
/** Longer than /audio/speech takes (4096 characters). */
const LONG_TEXT = SENTENCE.repeat(66).trim();

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ models: [tinyKokoroEntry(PRICED), tinyChatEntry()] });
});
afterAll(() => server.stop());

const retrieve = (target: TestServer, key: string, queueId: string) => () => post(target, "/audio/retrieve", { model: "tts-kokoro", queue_id: queueId }, { key });

describe("audio jobs: long speech", () => {
  it("quotes per character: character_count is required, duration_seconds is a music field", async () => {
    const quote = await post(server, "/audio/quote", { model: "tts-kokoro", character_count: 5000 });
    expect(quote.status).toBe(200);
    expect(await quote.json()).toEqual({ quote: 0.05 });
    const missing = await post(server, "/audio/quote", { model: "tts-kokoro" });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(await missing.json())).toContain("character_count");
    const duration = await post(server, "/audio/quote", { model: "tts-kokoro", character_count: 10, duration_seconds: 30 });
    expect(duration.status).toBe(400);
    expect(JSON.stringify(await duration.json())).toContain("duration_seconds");
  });

  it("reads a text longer than /audio/speech takes into one file that carries its duration, charged once when queued", async () => {
    expect(LONG_TEXT.length).toBeGreaterThan(4096);
    const { key, accountId } = server.createKey({ usd: 1 });
    const queued = await post(server, "/audio/queue", { model: "tts-kokoro", prompt: LONG_TEXT, voice: "af_bella", response_format: "flac" }, { key });
    expect(queued.status).toBe(200);
    const body = (await queued.json()) as { model: string; queue_id: string; status: string };
    expect(body).toEqual({ model: "tts-kokoro", queue_id: expect.any(String), status: "QUEUED" });
    // The whole price at queue time: 4,289 characters at $0.01 per thousand.
    const price = Math.round((LONG_TEXT.length * 0.01 * 1e6) / 1000);
    expect(Number(queued.headers.get("x-service-cost-usd"))).toBeCloseTo(price / 1e6, 6);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - price);

    const done = await retrieveUntilDone(retrieve(server, key, body.queue_id), { timeoutMs: 120_000 });
    expect(done.contentType).toBe("audio/flac");
    const seconds = fileDurationSeconds(done.video, "flac");
    expect(seconds).not.toBeNull();
    // The same text through /audio/speech in 4096-character halves: the job's file is their sum.
    const half = LONG_TEXT.lastIndexOf(". ", 2100) + 1;
    let expected = 0;
    for (const part of [LONG_TEXT.slice(0, half), LONG_TEXT.slice(half).trim()]) {
      const wav = await post(server, "/audio/speech", { model: "tts-kokoro", voice: "af_bella", input: part, response_format: "wav" });
      expected += fileDurationSeconds(Buffer.from(await wav.arrayBuffer()), "wav")!;
    }
    expect(seconds!).toBeCloseTo(expected, 1);
    // The samples were spooled to a scratch file beside it, gone once the file is written.
    expect(readdirSync(join(server.dataDir, "media", "audio"))).toEqual([`${body.queue_id}.flac`]);
    // Sent from the file as stored (streamed, never read whole into memory), a range of it too.
    const stored = readFileSync(join(server.dataDir, "media", "audio", `${body.queue_id}.flac`));
    expect(done.video.equals(stored)).toBe(true);
    const ranged = await post(server, "/audio/retrieve", { model: "tts-kokoro", queue_id: body.queue_id }, { key, headers: { range: "bytes=100-199" } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-type")).toBe("audio/flac");
    expect(Buffer.from(await ranged.arrayBuffer()).equals(stored.subarray(100, 200))).toBe(true);
    // A file gone from under its job (removed by hand, say) is a 404 in the error shape, not a 500.
    const storedPath = join(server.dataDir, "media", "audio", `${body.queue_id}.flac`);
    renameSync(storedPath, `${storedPath}.away`);
    const gone = await retrieve(server, key, body.queue_id)();
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: string }).error).toMatch(/no longer stored/);
    renameSync(`${storedPath}.away`, storedPath);
    // Nothing more is charged for retrieving; one usage row for the queue call.
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000 - price);
    expect(listUsage(server.db, accountId).filter((row) => row.endpoint === "/audio/queue")).toHaveLength(1);

    // Another account's key does not find it; complete deletes it.
    const stranger = server.createKey({ usd: 1 }).key;
    expect((await retrieve(server, stranger, body.queue_id)()).status).toBe(404);
    const completed = await post(server, "/audio/complete", { model: "tts-kokoro", queue_id: body.queue_id }, { key });
    expect(await completed.json()).toEqual({ success: true });
    expect((await retrieve(server, key, body.queue_id)()).status).toBe(404);
  });

  it("answers bad input with a 400 naming the field, and charges nothing for it", async () => {
    const { key, accountId } = server.createKey({ usd: 1 });
    const cases: [Record<string, unknown>, string][] = [
      [{ prompt: "Hello.", voice: "nobody" }, "voice"],
      [{ prompt: "Hello.", lyrics_prompt: "la la la" }, "lyrics_prompt"],
      [{ prompt: "Hello.", duration_seconds: 30 }, "duration_seconds"],
      [{ prompt: "Hello.", loop: true }, "loop"],
      [{ prompt: "Hello.", speed: 9 }, "speed"],
      [{ prompt: "" }, "prompt"],
      [{ prompt: "x".repeat(100_001) }, "prompt"],
      [{ prompt: "Hello.", response_format: "ogg" }, "response_format"],
    ];
    for (const [fields, name] of cases) {
      const res = await post(server, "/audio/queue", { model: "tts-kokoro", ...fields }, { key });
      expect(res.status, name).toBe(400);
      expect(JSON.stringify(await res.json()), name).toContain(name);
    }
    const chatModel = await post(server, "/audio/queue", { model: "tiny-chat", prompt: "Hello." }, { key });
    expect(chatModel.status).toBeGreaterThanOrEqual(400);
    expect(chatModel.status).toBeLessThan(500);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000);
  });

  it("a still-running job cannot be completed (400 naming queue_id)", async () => {
    const { key } = server.createKey({ usd: 1 });
    const queued = (await (await post(server, "/audio/queue", { model: "tts-kokoro", prompt: LONG_TEXT }, { key })).json()) as { queue_id: string };
    const early = await post(server, "/audio/complete", { model: "tts-kokoro", queue_id: queued.queue_id }, { key });
    // Reading 66 sentences takes seconds: the job is still queued or running.
    expect(early.status).toBe(400);
    expect(JSON.stringify(await early.json())).toContain("queue_id");
    await retrieveUntilDone(retrieve(server, key, queued.queue_id), { timeoutMs: 120_000 }).catch(() => undefined);
  });
});

describe("audio jobs across restarts", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-audio-jobs-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("a job interrupted by a shutdown runs again on the next start; one whose model is gone fails and is refunded exactly once", async () => {
    const first = await startTestServer({ dataDir, models: [tinyKokoroEntry(PRICED)] });
    const { key, accountId } = first.createKey({ usd: 1 });
    const queue = async (target: TestServer) =>
      ((await (await post(target, "/audio/queue", { model: "tts-kokoro", prompt: LONG_TEXT }, { key })).json()) as { queue_id: string }).queue_id;
    const survivor = await queue(first);
    const doomed = await queue(first);
    const price = Math.round((LONG_TEXT.length * 0.01 * 1e6) / 1000);
    expect(getBalances(first.db, accountId).USD).toBe(1_000_000 - 2 * price);
    await first.stop();

    // The next start serves the speech model: the interrupted job (or the queued one) completes.
    const second = await startTestServer({ dataDir, models: [tinyKokoroEntry(PRICED)] });
    const done = await retrieveUntilDone(retrieve(second, key, survivor), { timeoutMs: 120_000 });
    expect(done.contentType).toBe("audio/mpeg");
    expect(fileDurationSeconds(done.video, "mp3")).toBeGreaterThan(10);
    // Take the other job out of the queue's hands before it runs: stop, then start without the model.
    expect(getJob(second.db, doomed)!.status).not.toBe("COMPLETED");
    await second.stop();

    // What a process killed in a job that never runs again would leave: removed at the next start.
    for (const stray of ["a-job-failed-too-often.mp3.samples", "a-job-failed-too-often.mp3.partial"]) writeFileSync(join(dataDir, "media", "audio", stray), "left over");
    const third = await startTestServer({ dataDir, models: [tinyChatEntry()] });
    const failed = await jobRowOnceStatus(third.db, doomed, "FAILED");
    expect(failed.status).toBe("FAILED");
    expect(readdirSync(join(dataDir, "media", "audio"))).toEqual([`${survivor}.mp3`]);
    expect(failed.refundedAt).not.toBeNull();
    expect(getBalances(third.db, accountId).USD).toBe(1_000_000 - price);
    await third.stop();

    // Back with the model: the failed job answers 500 with credits_refunded, and nothing is refunded again.
    const fourth = await startTestServer({ dataDir, models: [tinyKokoroEntry(PRICED)] });
    // Interrupted, run again and failed: only the finished job's file is left, no scratch or partial file.
    expect(readdirSync(join(dataDir, "media", "audio"))).toEqual([`${survivor}.mp3`]);
    const answer = await retrieve(fourth, key, doomed)();
    expect(answer.status).toBe(500);
    expect(await answer.json()).toMatchObject({ status: "FAILED", credits_refunded: true });
    expect(getBalances(fourth.db, accountId).USD).toBe(1_000_000 - price);
    await fourth.stop();
  });
});
