import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sharp from "sharp";
import { ffmpegPath } from "../../src/media/ffmpeg.js";
import { countVideoFrames, probeMedia } from "../helpers/mediaProbe.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey, listApiKeys, updateApiKey } from "../../src/store/apiKeys.js";
import { getBalances, ledgerTotals, listLedgerEntries } from "../../src/store/ledger.js";
import { tinyVideoEntry } from "../helpers/mediaModels.js";
import { post, startTestServer, type TestServer } from "../helpers/testServer.js";
import { retrieveUntilDone } from "../helpers/video.js";
import { getJob, listAccountJobs } from "../../src/store/jobs.js";

const PER_SECOND = { pricing: { per_second: { usd: 0.05, diem: 0.05 }, resolutions: { "128p": { usd: 0.08, diem: 0.08 } } } };
let server: TestServer;
let broken: string;
const POLLING = JSON.stringify({ video_retrieve: { rpm: 100_000 } });

beforeAll(async () => {
  broken = mkdtempSync(join(tmpdir(), "hearth-broken-video-"));
  mkdirSync(join(broken, "unet"));
  server = await startTestServer({
    models: [
      tinyVideoEntry(PER_SECOND),
      tinyVideoEntry({
        id: "tiered-video",
        pricing: { durations: { short: { usd: 0.1, diem: 0.1, min_seconds: 1, max_seconds: 2 }, long: { usd: 0.25, diem: 0.25, min_seconds: 3, max_seconds: 3 } } },
      }),
      tinyVideoEntry({ id: "broken-video", file: broken, ...PER_SECOND }),
    ],
    config: { videoWorkers: 1 },
  });
  // Tests poll retrieve faster than the standard 120 per minute.
  for (const key of listApiKeys(server.db)) updateApiKey(server.db, key.id, { rateLimitOverrides: POLLING });
});
afterAll(async () => {
  await server.stop();
  rmSync(broken, { recursive: true, force: true });
});

function fundedKey(usdMicros: number, overrides = POLLING) {
  const account = createAccount(server.db, "video");
  server.credits.grant(account.id, "USD", usdMicros, "test");
  const { secret } = createApiKey(server.db, { accountId: account.id, description: "v", keyType: "INFERENCE", rateLimitOverrides: overrides });
  return { key: secret, accountId: account.id };
}
const json = async (res: Response) => (await res.json()) as any;

describe("POST /video/quote", () => {
  it("prices duration and resolution, per second or by duration tier", async () => {
    expect(await json(await post(server, "/video/quote", { model: "tiny-video", duration: "2s" }))).toEqual({ quote: 0.1 });
    expect(await json(await post(server, "/video/quote", { model: "tiny-video", duration: "3s", resolution: "128p" }))).toEqual({ quote: 0.24 });
    expect(await json(await post(server, "/video/quote", { model: "tiered-video", duration: "2s" }))).toEqual({ quote: 0.1 });
    expect(await json(await post(server, "/video/quote", { model: "tiered-video", duration: "3s" }))).toEqual({ quote: 0.25 });
    const bad = await post(server, "/video/quote", { model: "tiny-video", duration: "10s" });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error).toMatch(/1s, 2s, 3s/);
    expect((await post(server, "/video/quote", { model: "tiny-video", duration: "1s", resolution: "4k" })).status).toBe(400);
  });
});

describe("queue, then retrieve", () => {
  it("goes QUEUED -> RUNNING -> COMPLETED and returns an H.264 MP4 with duration x fps frames", async () => {
    const { key, accountId } = fundedKey(1_000_000);
    const queue = (body: Record<string, unknown>) => post(server, "/video/queue", { model: "tiny-video", prompt: "a boat on a lake", ...body }, { key });
    // A longer job first, so the second one waits in the queue behind it (one video worker).
    const first = await json(await queue({ duration: "3s", resolution: "128p", steps: 6, seed: 1 }));
    const res = await queue({ duration: "2s", aspect_ratio: "16:9", fps: 6, seed: 2 });
    expect(res.status).toBe(200);
    const second = await json(res);
    // Charged in full when queued: 3 s at the 128p rate, 2 s at the base rate; each response's headers show its own charge.
    expect(second).toEqual({ model: "tiny-video", queue_id: expect.any(String) });
    expect(first).toEqual({ model: "tiny-video", queue_id: expect.any(String) });
    expect(res.headers.get("x-service-cost-usd")).toBe("0.100000");
    expect(1_000_000 - getBalances(server.db, accountId).USD).toBe(240_000 + 100_000);

    const retrieve = (queueId: string, extra: Record<string, unknown> = {}) => post(server, "/video/retrieve", { model: "tiny-video", queue_id: queueId, ...extra }, { key });
    const waitingRes = await retrieve(second.queue_id);
    // The model's headers and the caller's balance, as on every model call.
    expect(waitingRes.headers.get("x-service-model-id")).toBe("tiny-video");
    expect(Number(waitingRes.headers.get("x-service-balance-usd"))).toBeCloseTo(1 - 0.34, 6);
    const waiting = await json(waitingRes);
    expect(waiting).toMatchObject({ status: "PROCESSING", state: "QUEUED", queue_position: 1, progress: 0 });
    expect(waiting.average_execution_time).toEqual(expect.any(Number));
    expect(waiting.execution_duration).toBeGreaterThanOrEqual(0);

    const a = await retrieveUntilDone(() => retrieve(first.queue_id));
    expect(a.states).toContain("RUNNING");
    expect(a.states.at(-1)).toBe("COMPLETED");
    expect(Math.max(...a.progress)).toBeGreaterThan(0);
    expect(countVideoFrames(a.video)).toBe(3 * 8);
    expect(probeMedia(a.video).streams[0]).toMatchObject({ kind: "video", codec: "h264", width: 128, height: 128 });

    const b = await retrieveUntilDone(() => retrieve(second.queue_id, { delete_media_on_completion: true }));
    expect(b.states.at(-1)).toBe("COMPLETED");
    expect(countVideoFrames(b.video)).toBe(2 * 6);
    expect(probeMedia(b.video).streams[0]).toMatchObject({ codec: "h264", width: 112, height: 64 });
    // delete_media_on_completion removed it; complete removes the other.
    await new Promise((r) => setTimeout(r, 50));
    expect((await retrieve(second.queue_id)).status).toBe(404);
    expect(await json(await post(server, "/video/complete", { model: "tiny-video", queue_id: first.queue_id }, { key }))).toEqual({ success: true });
    expect((await retrieve(first.queue_id)).status).toBe(404);
    // Now that there is history, the estimate is the P80 of real run times.
    const third = await json(await queue({ duration: "3s", resolution: "128p", steps: 12 }));
    expect(third, JSON.stringify(third)).toHaveProperty("queue_id");
    const early = await retrieve(third.queue_id);
    expect(early.headers.get("content-type")).toMatch(/json/);
    const earlyBody = await json(early);
    expect(earlyBody, JSON.stringify(earlyBody)).toHaveProperty("average_execution_time");
    expect(earlyBody.average_execution_time).toBeGreaterThan(0);
    await retrieveUntilDone(() => retrieve(third.queue_id));
    expect(ledgerTotals(server.db, accountId)).toEqual(getBalances(server.db, accountId));
  });

  it("the same seed and settings give the same video", async () => {
    const body = { model: "tiny-video", prompt: "waves", duration: "1s", seed: 77 };
    const ids = [(await json(await post(server, "/video/queue", body))).queue_id, (await json(await post(server, "/video/queue", body))).queue_id];
    const videos = await Promise.all(ids.map((id) => retrieveUntilDone(() => post(server, "/video/retrieve", { model: "tiny-video", queue_id: id }))));
    expect(videos[0]!.video.equals(videos[1]!.video)).toBe(true);
  });

  it("a job that fails is refunded exactly once and retrieve says so", async () => {
    const { key, accountId } = fundedKey(1_000_000);
    const queued = await json(await post(server, "/video/queue", { model: "broken-video", prompt: "x", duration: "2s" }, { key }));
    expect(getBalances(server.db, accountId).USD).toBe(900_000);
    let res: Response | undefined;
    for (let i = 0; i < 200; i++) {
      res = await post(server, "/video/retrieve", { model: "broken-video", queue_id: queued.queue_id }, { key });
      if (res.status !== 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(res!.status).toBe(500);
    const body = await json(res!);
    expect(body).toMatchObject({ code: "VIDEO_GENERATION_FAILED", status: "FAILED", credits_refunded: true });
    expect(body.error).toMatch(/not a diffusers ONNX export/);
    expect(getBalances(server.db, accountId).USD).toBe(1_000_000);
    expect(server.jobs.fail(queued.queue_id, "again")).toBe(false);
    const kinds = listLedgerEntries(server.db, { requestId: queued.queue_id }).map(({ kind, deltaMicros }) => ({ kind, delta_micros: deltaMicros }));
    expect(kinds).toEqual([
      { kind: "charge", delta_micros: -100_000 },
      { kind: "refund", delta_micros: 100_000 },
    ]);
    expect(ledgerTotals(server.db, accountId)).toEqual(getBalances(server.db, accountId));
  });

  it("refuses inputs a text-to-video model cannot use, other callers' jobs, and an unpaid job", async () => {
    const image = await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s", end_image_url: "data:image/png;base64,AAAA" });
    expect(image.status).toBe(400);
    expect((await json(image)).error).toMatch(/first-frame image_url.*end_image_url/);
    const undecodable = await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s", image_url: "data:image/png;base64,AAAA" });
    expect(undecodable.status).toBe(400);
    expect(JSON.stringify(await json(undecodable))).toContain("image_url");
    // An http(s) picture needs the fetching opt-in (this node has it off).
    const remote = await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s", image_url: "http://127.0.0.1:9/a.png" });
    expect(remote.status).toBe(503);
    const mine = fundedKey(1_000_000);
    const queued = await json(await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s" }, { key: mine.key }));
    const other = fundedKey(1_000_000);
    expect((await post(server, "/video/retrieve", { model: "tiny-video", queue_id: queued.queue_id }, { key: other.key })).status).toBe(404);
    expect((await post(server, "/video/retrieve", { model: "tiered-video", queue_id: queued.queue_id }, { key: mine.key })).status).toBe(404);
    const poor = fundedKey(1_000);
    const unpaid = await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s" }, { key: poor.key });
    expect(unpaid.status).toBe(402);
    expect(listAccountJobs(server.db, poor.accountId)).toHaveLength(0);
    await retrieveUntilDone(() => post(server, "/video/retrieve", { model: "tiny-video", queue_id: queued.queue_id }, { key: mine.key }));
  });

  it("accepts audio, upscale_factor and omni_reference_task_type and names them as not honoured (the model makes silent video)", async () => {
    const mine = fundedKey(1_000_000);
    const body = { model: "tiny-video", prompt: "x", duration: "1s", audio: true, upscale_factor: 2, omni_reference_task_type: "auto" };
    const queued = await post(server, "/video/queue", body, { key: mine.key });
    expect(queued.status).toBe(200);
    expect(queued.headers.get("x-service-unsupported-parameters")).toBe("audio,upscale_factor,omni_reference_task_type");
    const queueId = (await json(queued)).queue_id as string;
    const quote = await post(server, "/video/quote", { model: "tiny-video", duration: "1s", audio: true });
    expect(quote.status).toBe(200);
    expect(quote.headers.get("x-service-unsupported-parameters")).toBe("audio");
    // audio: false is what the model does anyway.
    const silent = await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s", audio: false }, { key: mine.key });
    expect(silent.status).toBe(200);
    expect(silent.headers.get("x-service-unsupported-parameters")).toBeNull();
    for (const [name, value] of [
      ["audio", "yes"],
      ["omni_reference_task_type", "remix"],
    ] as const) {
      const bad = await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s", [name]: value }, { key: mine.key });
      expect(bad.status, name).toBe(400);
      expect((await json(bad)).details, name).toHaveProperty(name);
    }
    // The video is made, without an audio stream.
    const { video } = await retrieveUntilDone(() => post(server, "/video/retrieve", { model: "tiny-video", queue_id: queueId }, { key: mine.key }));
    const kinds = probeMedia(video).streams.map((stream) => stream.kind);
    expect(kinds).toContain("video");
    expect(kinds).not.toContain("audio");
  });

  it("applies the video queue and retrieve rate-limit tiers", async () => {
    const { key } = fundedKey(1_000_000, JSON.stringify({ video_queue: { rpm: 1 }, video_retrieve: { rpm: 2 } }));
    await server.withClockStopped(async () => {
      const first = await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s" }, { key });
      expect(first.status).toBe(200);
      expect(first.headers.get("x-ratelimit-limit-requests")).toBe("1");
      expect((await post(server, "/video/queue", { model: "tiny-video", prompt: "x", duration: "1s" }, { key })).status).toBe(429);
      const { queue_id } = await json(first);
      const retrieve = () => post(server, "/video/retrieve", { model: "tiny-video", queue_id }, { key });
      expect((await retrieve()).headers.get("x-ratelimit-limit-requests")).toBe("2");
      await retrieve();
      expect((await retrieve()).status).toBe(429);
    });
  });

  it("lists the video model with the reference's video constraints", async () => {
    const record = await json(await fetch(`${server.baseUrl}/models/tiny-video`));
    expect(record.type).toBe("video");
    expect(record.model_spec.constraints).toMatchObject({
      durations: ["1s", "2s", "3s"],
      resolutions: ["64p", "128p"],
      model_type: "text-to-video",
      audio: false,
      audio_configurable: false,
    });
  });
});

describe("a restart in the middle of a video job", () => {
  it("puts the job back in the queue and finishes it on the next start, charged once", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hearth-video-restart-"));
    const models = [tinyVideoEntry({ ...PER_SECOND, image: { defaultSteps: 12 } })];
    try {
      const first = await startTestServer({ models, dataDir });
      const account = createAccount(first.db, "restart");
      first.credits.grant(account.id, "USD", 1_000_000, "test");
      const { secret: key } = createApiKey(first.db, { accountId: account.id, description: "r", keyType: "INFERENCE", rateLimitOverrides: POLLING });
      const { queue_id } = await json(await post(first, "/video/queue", { model: "tiny-video", prompt: "a lighthouse", duration: "3s", resolution: "128p", seed: 5 }, { key }));
      let state = "";
      for (let i = 0; i < 400 && state !== "RUNNING"; i++) {
        state = (await json(await post(first, "/video/retrieve", { model: "tiny-video", queue_id }, { key }))).state;
        if (state !== "RUNNING") await new Promise((r) => setTimeout(r, 25));
      }
      expect(state).toBe("RUNNING");
      await first.stop();

      const second = await startTestServer({ models, dataDir });
      try {
        const row = getJob(second.db, queue_id)!;
        expect(["QUEUED", "RUNNING"]).toContain(row.status);
        const { video } = await retrieveUntilDone(() => post(second, "/video/retrieve", { model: "tiny-video", queue_id }, { key }));
        expect(countVideoFrames(video)).toBe(24);
        expect(getBalances(second.db, account.id).USD).toBe(1_000_000 - 240_000);
        expect(listLedgerEntries(second.db, { requestId: queue_id })).toHaveLength(1);
        // A graceful shutdown does not count as an attempt.
        expect(getJob(second.db, queue_id)!.attempts).toBe(1);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("image-to-video", () => {
  /** Every frame of an MP4 as raw RGB. */
  function decodeFrames(mp4: Buffer, width: number, height: number): Buffer[] {
    const raw = spawnSync(ffmpegPath(), ["-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"], {
      input: mp4,
      maxBuffer: 64 * 1024 * 1024,
    }).stdout;
    const size = width * height * 3;
    return Array.from({ length: raw.length / size }, (_, i) => raw.subarray(i * size, (i + 1) * size));
  }
  const meanDifference = (a: Buffer, b: Buffer) => a.reduce((sum, v, i) => sum + Math.abs(v - b[i]!), 0) / a.length;

  it("image_url makes the first frame from the picture; the frames after it are the text-to-video ones, charged the same", async () => {
    const { key, accountId } = fundedKey(1_000_000);
    const rgb = Buffer.alloc(64 * 64 * 3);
    for (let i = 0; i < rgb.length; i += 3) rgb.fill(i % 96 < 48 ? 250 : 10, i, i + 3);
    const png = await sharp(rgb, { raw: { width: 64, height: 64, channels: 3 } })
      .png()
      .toBuffer();
    const queue = async (extra: Record<string, unknown>) =>
      (await json(await post(server, "/video/queue", { model: "tiny-video", prompt: "waves", duration: "1s", resolution: "64p", seed: 5, ...extra }, { key }))).queue_id as string;
    const plainId = await queue({});
    const fromImageId = await queue({ image_url: `data:image/png;base64,${png.toString("base64")}` });
    const retrieve = (queueId: string) => () => post(server, "/video/retrieve", { model: "tiny-video", queue_id: queueId }, { key });
    const plain = decodeFrames((await retrieveUntilDone(retrieve(plainId))).video, 64, 64);
    const fromImage = decodeFrames((await retrieveUntilDone(retrieve(fromImageId))).video, 64, 64);
    expect(fromImage).toHaveLength(plain.length);
    // The first frame differs; the last is the same picture (up to H.264's own loss, which a different first frame shifts a little).
    expect(meanDifference(fromImage[0]!, plain[0]!)).toBeGreaterThan(4 * meanDifference(fromImage.at(-1)!, plain.at(-1)!) + 1);
    const charged = listLedgerEntries(server.db, { accountId, kind: "charge" });
    expect(charged).toHaveLength(2);
    expect(charged[0]!.deltaMicros).toBe(charged[1]!.deltaMicros);
  });
});
