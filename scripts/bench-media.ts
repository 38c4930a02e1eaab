/**
 * Media benchmark: seconds per image, seconds of generation per second of video, seconds per
 * upscaled megapixel (of output), seconds per background removal and per edit, real-time factor
 * of long speech and of music as audio jobs (seconds of compute per second of audio), and
 * embeddings per second at batch 1 and 32, on the demo models (or the models of --config),
 * measured through a real server in this process over HTTP, so the numbers include the
 * worker threads, encoding (sharp, ffmpeg), billing and the job queue. Each row also gives the
 * longest the server's event loop stood still during the measured work: how long any other
 * request (a chat stream's next token) could have waited behind it.
 *
 *   node --import tsx scripts/bench-media.ts [--config models.config.json] [--images 5] [--video-seconds 5]
 *
 * Writes bench-out/media.json next to the table it prints.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { PACKAGE_ROOT } from "../src/config/packageRoot.js";
import { loadServerConfig } from "../src/config/serverSettings.js";
import { createLogger } from "../src/logger.js";
import { startServer } from "../src/server.js";
import { createAccount } from "../src/store/accounts.js";
import { createApiKey } from "../src/store/apiKeys.js";
import sharp from "sharp";
import { getJob } from "../src/store/jobs.js";
import { grantCredits, toMicros } from "../src/store/ledger.js";
import { withLoopStall } from "./bench/eventLoopStall.js";

const { values } = parseArgs({
  options: {
    config: { type: "string", default: join(PACKAGE_ROOT, "models.config.json") },
    images: { type: "string", default: "5" },
    "video-seconds": { type: "string", default: "5" },
    "embedding-requests": { type: "string", default: "100" },
    /** Side of the square picture upscaled 2x (the result is 4x as many pixels). */
    "upscale-size": { type: "string", default: "512" },
    /** Characters of text read by an audio job. */
    "speech-characters": { type: "string", default: "3000" },
    /** Seconds of music an audio job plays (the demo model's longest clip). */
    "music-seconds": { type: "string", default: "30" },
  },
});

const dataDir = mkdtempSync(join(tmpdir(), "hearth-bench-media-"));
const config = { ...loadServerConfig({ port: "0", dataDir, configPath: resolve(values.config!), logLevel: "warn" }), videoWorkers: 1 };
const server = await startServer(config, { logger: createLogger("warn"), gpu: "auto" });
const account = createAccount(server.db, "bench");
// Priced demo models (the upscaler, background removal) charge: enough credit for any run.
grantCredits(server.db, account.id, "USD", toMicros(10_000), "bench");
const { secret: key } = createApiKey(server.db, { accountId: account.id, description: "bench", keyType: "ADMIN", rateLimitOverrides: JSON.stringify({ "*": { rpm: 1_000_000 } }) });
const call = async (path: string, body: unknown) => {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok && !res.headers.get("content-type")?.includes("video")) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res;
};
const seconds = (ms: number) => Math.round(ms) / 1000;
/** Polls an audio job until retrieve answers the file. */
const pollAudio = async (model: string, queueId: string) => {
  for (;;) {
    const res = await call("/audio/retrieve", { model, queue_id: queueId });
    if (!res.headers.get("content-type")?.includes("json")) return Buffer.from(await res.arrayBuffer());
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 100));
  }
};
/** A finished audio job's compute time per second of its 16-bit mono WAV (the header's sample rate, then the data). */
const audioJobTiming = (queueId: string, wav: Buffer) => {
  const job = getJob(server.db, queueId) as { startedAt: number; finishedAt: number };
  const audioSeconds = (wav.length - 44) / 2 / wav.readUInt32LE(24);
  const jobMs = job.finishedAt - job.startedAt;
  return { audioSeconds, jobMs, rtf: Math.round((jobMs / 1000 / audioSeconds) * 1000) / 1000 };
};
/** A PNG of deterministic noise (every pixel different, so no model can shortcut it), base64. */
const noisePng = async (width: number, height: number) =>
  (
    await sharp(Buffer.from(Array.from({ length: width * height * 3 }, (_, i) => (i * 2654435761) % 251)), { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer()
  ).toString("base64");
/** A mask PNG, white (repaint) on the left half, base64. */
const leftHalfMaskPng = async (width: number, height: number) =>
  (
    await sharp(Buffer.from(Array.from({ length: width * height }, (_, i) => (i % width < width / 2 ? 255 : 0))), { raw: { width, height, channels: 1 } })
      .png()
      .toBuffer()
  ).toString("base64");
const results: Record<string, unknown> = { machine: { cpus: cpus().length, model: cpus()[0]?.model }, when: new Date().toISOString() };
const rows: string[][] = [];

try {
  const models = server.models.list();
  for (const entry of models.filter((m) => m.type === "image")) {
    const { defaultWidth: width, defaultHeight: height, defaultSteps: steps, defaultCfgScale: cfg } = entry.image;
    const body = { model: entry.id, prompt: "a lighthouse on a cliff at sunset, oil painting", width, height, format: "png", seed: 1 };
    await call("/image/generate", body); // load the model, warm the worker
    const n = Number(values.images);
    const t0 = performance.now();
    const { longestStallMs } = await withLoopStall(async () => {
      for (let i = 0; i < n; i++) await (await call("/image/generate", { ...body, seed: i + 2 })).arrayBuffer();
    });
    const perImage = seconds((performance.now() - t0) / n);
    results[entry.id] = { width, height, steps, cfgScale: cfg, images: n, secondsPerImage: perImage, longestStallMs };
    rows.push([entry.id, `${width}x${height}, ${steps} steps, cfg ${cfg}`, `${perImage} s/image`, `${longestStallMs} ms`]);
  }

  for (const entry of models.filter((m) => m.type === "video")) {
    const videoSeconds = Number(values["video-seconds"]);
    const duration = `${videoSeconds}s`;
    if (!entry.video.durations.includes(duration)) throw new Error(`${entry.id} does not offer ${duration}`);
    const resolution = entry.video.defaultResolution;
    const poll = async (queueId: string) => {
      for (;;) {
        const res = await call("/video/retrieve", { model: entry.id, queue_id: queueId });
        if (res.headers.get("content-type")?.includes("video/mp4")) return Buffer.from(await res.arrayBuffer());
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    // Warm-up: a one-second video loads the model.
    await poll(((await (await call("/video/queue", { model: entry.id, prompt: "waves", duration: entry.video.durations[0] })).json()) as { queue_id: string }).queue_id);
    const t0 = performance.now();
    const { value: queue_id, longestStallMs } = await withLoopStall(async () => {
      const { queue_id } = (await (await call("/video/queue", { model: entry.id, prompt: "waves crashing on a beach", duration, seed: 3 })).json()) as { queue_id: string };
      return queue_id;
    });
    const { value: mp4, longestStallMs: pollingStallMs } = await withLoopStall(() => poll(queue_id));
    const wall = performance.now() - t0;
    const job = getJob(server.db, queue_id) as { startedAt: number; finishedAt: number };
    const run = job.finishedAt - job.startedAt;
    const frames = videoSeconds * entry.video.fps;
    results[entry.id] = {
      duration,
      resolution,
      fps: entry.video.fps,
      frames,
      steps: entry.image.defaultSteps,
      bytes: mp4.length,
      jobSeconds: seconds(run),
      secondsPerVideoSecond: seconds(run / videoSeconds),
      wallSecondsIncludingPolling: seconds(wall),
      longestStallMs: Math.max(longestStallMs, pollingStallMs),
    };
    rows.push([
      entry.id,
      `${duration} at ${resolution}, ${entry.video.fps} fps (${frames} frames), ${entry.image.defaultSteps} steps`,
      `${seconds(run / videoSeconds)} s per video second`,
      `${Math.max(longestStallMs, pollingStallMs)} ms`,
    ]);
  }

  for (const entry of models.filter((m) => m.type === "upscale")) {
    const side = Number(values["upscale-size"]);
    const image = await noisePng(side, side);
    // A 4x4 picture first: loads the model.
    await (await call("/image/upscale", { model: entry.id, image: await noisePng(4, 4) })).arrayBuffer();
    const t0 = performance.now();
    const { longestStallMs } = await withLoopStall(async () => (await call("/image/upscale", { model: entry.id, image, scale: 2 })).arrayBuffer());
    const run = performance.now() - t0;
    const megapixels = (side * 2) ** 2 / 1e6;
    results[entry.id] = {
      input: `${side}x${side}`,
      scale: 2,
      tileSize: entry.upscale.tileSize,
      seconds: seconds(run),
      secondsPerOutputMegapixel: seconds(run / megapixels),
      longestStallMs,
    };
    rows.push([
      entry.id,
      `${side}x${side} -> ${side * 2}x${side * 2}, tiles of ${entry.upscale.tileSize}`,
      `${seconds(run / megapixels)} s per output megapixel`,
      `${longestStallMs} ms`,
    ]);
  }

  for (const entry of models.filter((m) => m.type === "background-removal")) {
    const side = Number(values["upscale-size"]);
    const image = await noisePng(side, side);
    await (await call("/image/background-remove", { model: entry.id, image })).arrayBuffer();
    const runs = 3;
    const t0 = performance.now();
    const { longestStallMs } = await withLoopStall(async () => {
      for (let i = 0; i < runs; i++) await (await call("/image/background-remove", { model: entry.id, image })).arrayBuffer();
    });
    const perPicture = seconds((performance.now() - t0) / runs);
    results[entry.id] = { input: `${side}x${side}`, secondsPerPicture: perPicture, longestStallMs };
    rows.push([entry.id, `${side}x${side}, PNG with alpha`, `${perPicture} s per picture`, `${longestStallMs} ms`]);
  }

  for (const entry of models.filter((m) => m.type === "image" || m.type === "inpaint")) {
    const { defaultWidth: width, defaultHeight: height, defaultSteps: steps } = entry.image;
    const image = await noisePng(width, height);
    // An inpaint model edits what a mask marks (its default strength is then 1); an image model edits the whole picture at 0.75.
    const masked = entry.type === "inpaint";
    const mask = masked ? await leftHalfMaskPng(width, height) : undefined;
    const strength = masked ? 1 : 0.75;
    const edit = () =>
      fetch(`${server.baseUrl}/image/edit`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: entry.id, prompt: "at sunset", image, mask, seed: 1 }),
      });
    const warm = await edit();
    await warm.arrayBuffer();
    if (!warm.ok) continue; // an export without vae_encoder does not edit
    const runs = Number(values.images);
    const t0 = performance.now();
    const { longestStallMs } = await withLoopStall(async () => {
      for (let i = 0; i < runs; i++) await (await edit()).arrayBuffer();
    });
    const perEdit = seconds((performance.now() - t0) / runs);
    results[`${entry.id} (edit)`] = { width, height, steps, strength, masked, secondsPerEdit: perEdit, longestStallMs };
    rows.push([
      `${entry.id} (edit)`,
      `${width}x${height}, ${masked ? "left half masked, " : ""}strength ${strength} of ${steps} steps`,
      `${perEdit} s per edit`,
      `${longestStallMs} ms`,
    ]);
  }

  for (const entry of models.filter((m) => m.type === "tts" && m.backend !== "upstream")) {
    const sentence = "The quick brown fox jumps over the lazy dog near the river bank. ";
    const text = sentence.repeat(Math.ceil(Number(values["speech-characters"]) / sentence.length)).trim();
    const queue = async (prompt: string) => ((await (await call("/audio/queue", { model: entry.id, prompt, response_format: "wav" })).json()) as { queue_id: string }).queue_id;
    await pollAudio(entry.id, await queue("Warm up."));
    const { value, longestStallMs } = await withLoopStall(async () => {
      const queueId = await queue(text);
      return audioJobTiming(queueId, await pollAudio(entry.id, queueId));
    });
    const { audioSeconds, jobMs, rtf } = value;
    results[`${entry.id} (audio job)`] = { characters: text.length, audioSeconds: seconds(audioSeconds * 1000), jobSeconds: seconds(jobMs), realTimeFactor: rtf, longestStallMs };
    rows.push([`${entry.id} (audio job)`, `${text.length} characters -> ${seconds(audioSeconds * 1000)} s of speech`, `real-time factor ${rtf}`, `${longestStallMs} ms`]);
  }

  for (const entry of models.filter((m) => m.type === "music")) {
    const queue = async (durationSeconds: number) =>
      (
        (await (await call("/audio/queue", { model: entry.id, prompt: "calm lo-fi piano over soft drums", duration_seconds: durationSeconds, response_format: "wav" })).json()) as {
          queue_id: string;
        }
      ).queue_id;
    // A shortest clip first: loads the model.
    await pollAudio(entry.id, await queue(entry.music.minDurationSeconds));
    const { value, longestStallMs } = await withLoopStall(async () => {
      const queueId = await queue(Number(values["music-seconds"]));
      return audioJobTiming(queueId, await pollAudio(entry.id, queueId));
    });
    const { audioSeconds, jobMs, rtf } = value;
    results[`${entry.id} (audio job)`] = { audioSeconds: seconds(audioSeconds * 1000), jobSeconds: seconds(jobMs), realTimeFactor: rtf, longestStallMs };
    rows.push([`${entry.id} (audio job)`, `${seconds(audioSeconds * 1000)} s of music`, `real-time factor ${rtf}`, `${longestStallMs} ms`]);
  }

  for (const entry of models.filter((m) => m.type === "embedding")) {
    const sentence = (i: number) => `The quick brown fox number ${i} jumps over the lazy dog near the river bank.`;
    await call("/embeddings", { model: entry.id, input: "warm up" });
    const requests = Number(values["embedding-requests"]);
    const batches = Math.max(1, Math.round(requests / 10));
    let batch1 = 0;
    let batch32 = 0;
    const { longestStallMs } = await withLoopStall(async () => {
      let t0 = performance.now();
      for (let i = 0; i < requests; i++) await (await call("/embeddings", { model: entry.id, input: sentence(i) })).arrayBuffer();
      batch1 = requests / ((performance.now() - t0) / 1000);
      t0 = performance.now();
      for (let i = 0; i < batches; i++) {
        await (await call("/embeddings", { model: entry.id, input: Array.from({ length: 32 }, (_, j) => sentence(i * 32 + j)) })).arrayBuffer();
      }
      batch32 = (batches * 32) / ((performance.now() - t0) / 1000);
    });
    results[entry.id] = { backend: entry.backend, embeddingsPerSecondBatch1: Math.round(batch1), embeddingsPerSecondBatch32: Math.round(batch32), longestStallMs };
    rows.push([
      entry.id,
      `${entry.backend}, 1 input x ${requests} requests | 32 inputs x ${batches} requests`,
      `${Math.round(batch1)} /s | ${Math.round(batch32)} /s`,
      `${longestStallMs} ms`,
    ]);
  }
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}

rows.unshift(["model", "work", "speed", "longest event-loop stall"]);
const width = [0, 1, 2, 3].map((c) => Math.max(...rows.map((r) => r[c]!.length)));
process.stdout.write(`Media benchmark (${cpus().length} CPUs: ${cpus()[0]?.model ?? "unknown"})\n`);
for (const row of rows) process.stdout.write(`${row.map((cell, c) => cell.padEnd(width[c]!)).join("  ")}\n`);
mkdirSync(join(PACKAGE_ROOT, "bench-out"), { recursive: true });
writeFileSync(join(PACKAGE_ROOT, "bench-out", "media.json"), `${JSON.stringify(results, null, 2)}\n`);
