/**
 * Mixed-load benchmark: `npm run bench:mixed [-- --rounds 3 --with transcription,vision --audio-seconds 30]`.
 *
 * What one client's chat stream feels while another client's ONNX job runs on the same node:
 * the longest pause between the stream's tokens, alone and while the job runs, and the job's own
 * time, alone and with the chat streaming. The jobs, on random-weight models of real shapes
 * generated once into data/bench-models/ so that they cost what real ones do:
 *  - transcription: 30 s of audio on a Whisper-base shape (d_model 512, 8 heads, 6 encoder and 6
 *    decoder layers, the real 1500 encoder positions);
 *  - vision: a question about a 512×512 picture (tiled as SmolVLM tiles it: 16 tiles and the
 *    global view, 1,088 image tokens), 32 tokens answered, on a SmolVLM-256M text-model shape
 *    (width 576, 9 heads, 30 layers; the vision encoder is one layer, lighter than SigLIP's 12).
 * The chat model is the tiny demo GGUF, so the stream's pauses are what the job causes, not the
 * chat's own work. One server in this process, over HTTP. Writes bench-out/mixed.json next to
 * the table it prints.
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { PACKAGE_ROOT } from "../src/config/packageRoot.js";
import { loadServerConfig } from "../src/config/serverSettings.js";
import sharp from "sharp";
import { writeVisionLanguageModel, writeWhisperModel } from "../src/fixtures/onnx/index.js";
import { createLogger } from "../src/logger.js";
import { floatToPcm16, wavHeader } from "../src/media/pcm.js";
import { startServer } from "../src/server.js";
import { createAccount } from "../src/store/accounts.js";
import { createApiKey } from "../src/store/apiKeys.js";
import { grantCredits, toMicros } from "../src/store/ledger.js";
import { BENCH_MODELS_DIR, ensureGeneratedModel } from "./bench/models.js";
import { medianOf } from "./bench/verdict.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    /** Which jobs run beside the chat: transcription, vision (comma-separated). */
    with: { type: "string", default: "transcription,vision" },
    "audio-seconds": { type: "string", default: "30" },
    /** Tokens per chat request; requests follow one another for as long as a transcription runs. */
    "chat-tokens": { type: "string", default: "300" },
  },
});
const rounds = Number(values.rounds);
const audioSeconds = Number(values["audio-seconds"]);
const chatTokens = Number(values["chat-tokens"]);
const jobNames = values.with.split(",").map((name) => name.trim());
for (const name of jobNames) if (name !== "transcription" && name !== "vision") throw new Error(`--with: unknown job "${name}" (transcription, vision)`);

/** A generated model directory under data/bench-models, written once (to a partial directory first, so an interrupted run leaves none). */
async function ensureModelDir(name: string, write: (dir: string) => Promise<void>): Promise<string> {
  const dir = join(BENCH_MODELS_DIR, name);
  if (existsSync(join(dir, "config.json"))) return dir;
  mkdirSync(BENCH_MODELS_DIR, { recursive: true });
  const partial = `${dir}.partial-${process.pid}`;
  process.stderr.write(`generating ${dir}\n`);
  await write(partial);
  renameSync(partial, dir);
  return dir;
}

const chatModel = await ensureGeneratedModel("tiny");
const whisperDir = jobNames.includes("transcription")
  ? await ensureModelDir("whisper-base-shape", (dir) => writeWhisperModel(dir, { dModel: 512, heads: 8, encoderLayers: 6, decoderLayers: 6 }))
  : null;
const visionDir = jobNames.includes("vision")
  ? await ensureModelDir("smolvlm-256m-shape", (dir) =>
      writeVisionLanguageModel(dir, { hidden: 576, heads: 9, layers: 30, tileSize: 512, patchSize: 16, scaleFactor: 4, longestEdge: 2048, merges: 2000 }),
    )
  : null;
const dataDir = mkdtempSync(join(tmpdir(), "hearth-bench-mixed-"));
const configPath = join(dataDir, "models.json");
writeFileSync(
  configPath,
  JSON.stringify({
    models: [
      { id: "chat", type: "text", backend: "llama", file: chatModel.path, llama: { contextSize: 4096, sequences: 2, threads: 1 } },
      ...(whisperDir ? [{ id: "whisper-base-shape", type: "asr", backend: "whisper", file: whisperDir, onnx: { dtype: "fp32", threads: 1 } }] : []),
      ...(visionDir ? [{ id: "smolvlm-256m-shape", type: "text", backend: "transformers", file: visionDir, onnx: { dtype: "fp32", threads: 1 } }] : []),
    ],
  }),
);
const server = await startServer(loadServerConfig({ port: "0", dataDir, configPath, logLevel: "warn" }), { logger: createLogger("warn"), gpu: "auto" });
const account = createAccount(server.db, "bench");
grantCredits(server.db, account.id, "USD", toMicros(10_000), "bench");
const { secret: key } = createApiKey(server.db, { accountId: account.id, description: "bench", keyType: "ADMIN", rateLimitOverrides: JSON.stringify({ "*": { rpm: 1_000_000 } }) });

/** A tone with a slow swell, 16 kHz mono WAV. */
function toneWav(seconds: number): Buffer {
  const rate = 16000;
  const samples = Float32Array.from({ length: rate * seconds }, (_, i) => (8000 / 32767) * Math.sin((2 * Math.PI * 440 * i) / rate) * (0.5 + 0.5 * Math.sin(i / 4000)));
  const pcm = floatToPcm16(samples);
  return Buffer.concat([wavHeader(rate, pcm.length), pcm]);
}
const wav = toneWav(audioSeconds);

async function transcribe(): Promise<number> {
  const form = new FormData();
  form.append("model", "whisper-base-shape");
  form.append("file", new Blob([wav], { type: "audio/wav" }), "tone.wav");
  const startedAt = performance.now();
  const res = await fetch(`${server.baseUrl}/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
  await res.text();
  if (!res.ok) throw new Error(`transcription: ${res.status}`);
  return performance.now() - startedAt;
}

/** A 512×512 picture with some structure, as a PNG data URL. */
async function pictureUrl(): Promise<string> {
  const side = 512;
  const rgb = Buffer.alloc(side * side * 3);
  for (let i = 0; i < side * side; i++) {
    const [x, y] = [i % side, Math.floor(i / side)];
    rgb[i * 3] = x >> 1;
    rgb[i * 3 + 1] = y >> 1;
    rgb[i * 3 + 2] = (x ^ y) & 255;
  }
  const png = await sharp(rgb, { raw: { width: side, height: side, channels: 3 } })
    .png()
    .toBuffer();
  return `data:image/png;base64,${png.toString("base64")}`;
}
const picture = visionDir ? await pictureUrl() : "";

/** A question about the picture, answered whole. */
async function askAboutPicture(): Promise<number> {
  const startedAt = performance.now();
  const res = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "smolvlm-256m-shape",
      max_tokens: 32,
      temperature: 0,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in this picture?" },
            { type: "image_url", image_url: { url: picture } },
          ],
        },
      ],
    }),
  });
  const body = await res.text();
  if (!res.ok) throw new Error(`vision: ${res.status} ${body}`);
  return performance.now() - startedAt;
}

interface Job {
  name: string;
  /** What the job does, for the table. */
  doing: string;
  run(): Promise<number>;
}
const jobs: Job[] = jobNames.map((name) =>
  name === "transcription"
    ? { name, doing: `${audioSeconds} s are transcribed`, run: transcribe }
    : { name, doing: "a 512×512 picture question is answered (32 tokens)", run: askAboutPicture },
);

/** One streamed chat request: the longest pause between its chunks, and how many there were. */
async function chat(maxTokens: number): Promise<{ longestPauseMs: number; chunks: number }> {
  const res = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat", stream: true, max_tokens: maxTokens, temperature: 0, messages: [{ role: "user", content: "Tell me a long story." }] }),
  });
  if (!res.ok || !res.body) throw new Error(`chat: ${res.status}`);
  const reader = res.body.getReader();
  let last = performance.now();
  let longestPauseMs = 0;
  let chunks = 0;
  for (;;) {
    const { done } = await reader.read();
    if (done) break;
    const now = performance.now();
    longestPauseMs = Math.max(longestPauseMs, now - last);
    last = now;
    chunks++;
  }
  return { longestPauseMs, chunks };
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const perRound: Record<string, Record<string, number>[]> = Object.fromEntries(jobs.map((job) => [job.name, []]));
try {
  // Warm-up: loads every model.
  for (const job of jobs) await job.run();
  await chat(8);
  for (let r = 0; r < rounds; r++) {
    for (const job of jobs) {
      const alone = await chat(chatTokens);
      const jobAloneMs = await job.run();
      let running = true;
      let longestPauseMs = 0;
      let chunks = 0;
      const streaming = (async () => {
        while (running) {
          const run = await chat(chatTokens);
          longestPauseMs = Math.max(longestPauseMs, run.longestPauseMs);
          chunks += run.chunks;
        }
      })();
      // Let the stream start before the job does.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const jobWithChatMs = await job.run();
      running = false;
      await streaming;
      perRound[job.name]!.push({
        chatAloneLongestPauseMs: round1(alone.longestPauseMs),
        chatDuringJobLongestPauseMs: round1(longestPauseMs),
        chatChunksDuringJob: chunks,
        jobAloneMs: Math.round(jobAloneMs),
        jobWithChatMs: Math.round(jobWithChatMs),
      });
    }
  }
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}

const summaries: Record<string, Record<string, number>> = {};
const rows: string[][] = [];
for (const job of jobs) {
  const runs = perRound[job.name]!;
  const summary = Object.fromEntries(Object.keys(runs[0] ?? {}).map((k) => [k, medianOf(runs.map((r) => r[k]!))]));
  summaries[job.name] = summary;
  rows.push(
    [`${job.name}: chat stream alone`, `longest pause ${summary.chatAloneLongestPauseMs} ms`],
    [`${job.name}: chat stream while ${job.doing}`, `longest pause ${summary.chatDuringJobLongestPauseMs} ms, ${summary.chatChunksDuringJob} chunks meanwhile`],
    [`${job.name}: the job alone`, `${summary.jobAloneMs} ms`],
    [`${job.name}: the job with the chat streaming`, `${summary.jobWithChatMs} ms`],
  );
}
const width = Math.max(...rows.map((r) => r[0]!.length));
process.stdout.write(`Mixed load, medians of ${rounds} rounds (${cpus().length} CPUs: ${cpus()[0]?.model ?? "unknown"})\n`);
for (const [what, value] of rows) process.stdout.write(`${what!.padEnd(width)}  ${value}\n`);
mkdirSync(join(PACKAGE_ROOT, "bench-out"), { recursive: true });
writeFileSync(join(PACKAGE_ROOT, "bench-out", "mixed.json"), `${JSON.stringify({ when: new Date().toISOString(), audioSeconds, chatTokens, perRound, summaries }, null, 2)}\n`);
