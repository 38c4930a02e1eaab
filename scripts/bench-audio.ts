/**
 * Audio benchmark: `npm run bench:audio [-- --runs 5 --json]`.
 *
 * Starts a real Hearth on the bundled registry's demo models (generated into a temporary data
 * directory) and measures through HTTP, as a client sees it:
 *   - text-to-speech real-time factor (wall time / seconds of audio; below 1 is faster than real time),
 *   - time to the first audio chunk of a streamed response (mp3 through the streaming encoder, and raw pcm),
 *   - transcription real-time factor on a short and a long (chunked) clip.
 * Medians over --runs runs, after one warm-up. The demo models have tiny random weights: the
 * numbers measure Hearth's pipeline (phonemes, tokenizer, onnxruntime, ffmpeg, HTTP), not a real
 * model's compute; point models.config.json at real weights and rerun for those.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { loadModelsConfig } from "../src/models/loadModelsConfig.js";
import { loadServerConfig, ServerConfig } from "../src/config/serverSettings.js";
import { createLogger } from "../src/logger.js";
import { encodeAudio } from "../src/media/ffmpeg.js";
import { startServer } from "../src/server.js";
import { createAccount } from "../src/store/accounts.js";
import { createApiKey } from "../src/store/apiKeys.js";
import { grantCredits } from "../src/store/ledger.js";

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf("--runs") + 1]) || 5;
const asJson = args.includes("--json");

const PARAGRAPH =
  "Hearth runs speech models on the machine in front of you. It splits the text into sentences and synthesises them one after another. " +
  "Streaming sends the first sentence while the next ones are still being made. The quick brown fox jumps over the lazy dog. " +
  "Numbers like 1984 and $3.50 are read out as words. This paragraph has six sentences, about one hundred words.";

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-bench-audio-"));
  const defaults = loadServerConfig({}, {});
  const config = ServerConfig.parse({ ...defaults, port: 0, dataDir, logLevel: "silent" });
  const server = await startServer(config, { modelsConfig: loadModelsConfig(defaults.configPath, dataDir, {}), gpu: false, logger: createLogger("silent") });
  const account = createAccount(server.db, "bench");
  grantCredits(server.db, account.id, "USD", 1_000_000_000, "bench");
  const { secret } = createApiKey(server.db, { accountId: account.id, description: "bench", keyType: "INFERENCE" });
  const headers = { authorization: `Bearer ${secret}`, "content-type": "application/json" };
  const results: Record<string, Record<string, number | string>> = {};

  try {
    for (const model of server.models
      .list()
      .filter((m) => m.type === "tts")
      .map((m) => m.id)) {
      const speak = (body: Record<string, unknown>) =>
        fetch(`${server.baseUrl}/audio/speech`, { method: "POST", headers, body: JSON.stringify({ model, input: PARAGRAPH, ...body }) });
      const rtf: number[] = [];
      const audioSeconds: number[] = [];
      const firstChunk: Record<"mp3" | "pcm", number[]> = { mp3: [], pcm: [] };
      const streamTotal: number[] = [];
      for (let run = 0; run <= runs; run++) {
        const started = performance.now();
        const pcm = await (await speak({ response_format: "pcm" })).arrayBuffer();
        const wall = (performance.now() - started) / 1000;
        const seconds = pcm.byteLength / 2 / 24000;
        for (const format of ["mp3", "pcm"] as const) {
          const streamStart = performance.now();
          const response = await speak({ response_format: format, streaming: true });
          const reader = response.body!.getReader();
          let first: number | undefined;
          for (let next = await reader.read(); !next.done; next = await reader.read()) first ??= performance.now() - streamStart;
          if (run === 0) continue;
          firstChunk[format].push(first!);
          if (format === "mp3") streamTotal.push(performance.now() - streamStart);
        }
        if (run === 0) continue; // warm-up: model load, first ffmpeg spawn
        rtf.push(wall / seconds);
        audioSeconds.push(seconds);
      }
      results[`tts ${model}`] = {
        "audio s": Number(median(audioSeconds).toFixed(2)),
        RTF: Number(median(rtf).toFixed(4)),
        "first chunk mp3 ms": Math.round(median(firstChunk.mp3)),
        "first chunk pcm ms": Math.round(median(firstChunk.pcm)),
        "stream total mp3 ms": Math.round(median(streamTotal)),
      };
    }

    const tts = await fetch(`${server.baseUrl}/audio/speech`, { method: "POST", headers, body: JSON.stringify({ model: "tts-kokoro", input: PARAGRAPH, response_format: "mp3" }) });
    const spoken = Buffer.from(await tts.arrayBuffer());
    const rate = 16000;
    const longClip = await encodeAudio(
      Float32Array.from({ length: 90 * rate }, (_, i) => 0.3 * Math.sin((2 * Math.PI * (180 + (i % rate) / 50) * i) / rate)),
      rate,
      "mp3",
    );
    for (const model of server.models
      .list()
      .filter((m) => m.type === "asr")
      .map((m) => m.id)) {
      for (const [name, clip] of [
        ["speech", spoken],
        ["90 s tone", longClip],
      ] as const) {
        const rtf: number[] = [];
        let duration = 0;
        for (let run = 0; run <= runs; run++) {
          const form = new FormData();
          form.append("model", model);
          form.append("file", new Blob([new Uint8Array(clip)]), "clip.mp3");
          const started = performance.now();
          const response = await fetch(`${server.baseUrl}/audio/transcriptions`, { method: "POST", headers: { authorization: headers.authorization }, body: form });
          const body = (await response.json()) as { duration: number };
          const wall = (performance.now() - started) / 1000;
          duration = body.duration;
          if (run > 0) rtf.push(wall / body.duration);
        }
        results[`asr ${model} (${name})`] = { "audio s": Number(duration.toFixed(2)), RTF: Number(median(rtf).toFixed(4)) };
      }
    }
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }

  if (asJson) {
    process.stdout.write(`${JSON.stringify({ runs, cpus: cpus().length, results }, null, 2)}\n`);
    return;
  }
  process.stdout.write(`Hearth audio benchmark: demo models (tiny random weights), ${runs} runs (median), ${cpus().length} CPUs, node ${process.version}\n`);
  console.table(results);
}

await main();
