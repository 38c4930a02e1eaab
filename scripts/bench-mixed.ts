/**
 * Mixed-load benchmark: `npm run bench:mixed [-- --rounds 3 --audio-seconds 30]`.
 *
 * What one client's chat stream feels while another client transcribes on the same node: the
 * longest pause between the stream's tokens, alone and while a transcription runs, and the
 * transcription's own time, alone and with the chat streaming. The transcription model is
 * Whisper-base-shaped (d_model 512, 8 heads, 6 encoder and 6 decoder layers, the real 1500
 * encoder positions) with random weights, generated once into data/bench-models/, so its
 * encoder costs what a real one does; the chat model is the tiny demo GGUF, so the stream's
 * pauses are what the transcription causes, not the chat's own work. One server in this process,
 * over HTTP. Writes bench-out/mixed.json next to the table it prints.
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { PACKAGE_ROOT } from "../src/config/packageRoot.js";
import { loadServerConfig } from "../src/config/serverSettings.js";
import { writeWhisperModel } from "../src/fixtures/onnx/index.js";
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
    "audio-seconds": { type: "string", default: "30" },
    /** Tokens per chat request; requests follow one another for as long as a transcription runs. */
    "chat-tokens": { type: "string", default: "300" },
  },
});
const rounds = Number(values.rounds);
const audioSeconds = Number(values["audio-seconds"]);
const chatTokens = Number(values["chat-tokens"]);

async function ensureWhisperBaseShape(): Promise<string> {
  const dir = join(BENCH_MODELS_DIR, "whisper-base-shape");
  if (existsSync(join(dir, "config.json"))) return dir;
  mkdirSync(BENCH_MODELS_DIR, { recursive: true });
  const partial = `${dir}.partial-${process.pid}`;
  process.stderr.write(`generating ${dir}\n`);
  await writeWhisperModel(partial, { dModel: 512, heads: 8, encoderLayers: 6, decoderLayers: 6 });
  renameSync(partial, dir);
  return dir;
}

const chatModel = await ensureGeneratedModel("tiny");
const whisperDir = await ensureWhisperBaseShape();
const dataDir = mkdtempSync(join(tmpdir(), "hearth-bench-mixed-"));
const configPath = join(dataDir, "models.json");
writeFileSync(
  configPath,
  JSON.stringify({
    models: [
      { id: "chat", type: "text", backend: "llama", file: chatModel.path, llama: { contextSize: 4096, sequences: 2, threads: 1 } },
      { id: "whisper-base-shape", type: "asr", backend: "whisper", file: whisperDir, onnx: { dtype: "fp32", threads: 1 } },
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
const perRound: Record<string, number>[] = [];
try {
  // Warm-up: loads both models.
  await transcribe();
  await chat(8);
  for (let r = 0; r < rounds; r++) {
    const alone = await chat(chatTokens);
    const transcriptionAloneMs = await transcribe();
    let transcribing = true;
    let longestPauseMs = 0;
    let chunks = 0;
    const streaming = (async () => {
      while (transcribing) {
        const run = await chat(chatTokens);
        longestPauseMs = Math.max(longestPauseMs, run.longestPauseMs);
        chunks += run.chunks;
      }
    })();
    // Let the stream start before the transcription does.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const transcriptionWithChatMs = await transcribe();
    transcribing = false;
    await streaming;
    perRound.push({
      chatAloneLongestPauseMs: round1(alone.longestPauseMs),
      chatWhileTranscribingLongestPauseMs: round1(longestPauseMs),
      chatChunksWhileTranscribing: chunks,
      transcriptionAloneMs: Math.round(transcriptionAloneMs),
      transcriptionWithChatMs: Math.round(transcriptionWithChatMs),
    });
  }
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}

const summary = Object.fromEntries(Object.keys(perRound[0] ?? {}).map((k) => [k, medianOf(perRound.map((r) => r[k]!))]));
const rows = [
  ["chat stream alone", `longest pause ${summary.chatAloneLongestPauseMs} ms`],
  [
    `chat stream while ${audioSeconds} s are transcribed`,
    `longest pause ${summary.chatWhileTranscribingLongestPauseMs} ms, ${summary.chatChunksWhileTranscribing} chunks meanwhile`,
  ],
  [`transcription of ${audioSeconds} s alone`, `${summary.transcriptionAloneMs} ms`],
  [`transcription of ${audioSeconds} s with the chat streaming`, `${summary.transcriptionWithChatMs} ms`],
];
const width = Math.max(...rows.map((r) => r[0]!.length));
process.stdout.write(`Mixed load, medians of ${rounds} rounds (${cpus().length} CPUs: ${cpus()[0]?.model ?? "unknown"})\n`);
for (const [what, value] of rows) process.stdout.write(`${what!.padEnd(width)}  ${value}\n`);
mkdirSync(join(PACKAGE_ROOT, "bench-out"), { recursive: true });
writeFileSync(join(PACKAGE_ROOT, "bench-out", "mixed.json"), `${JSON.stringify({ when: new Date().toISOString(), audioSeconds, chatTokens, perRound, summary }, null, 2)}\n`);
