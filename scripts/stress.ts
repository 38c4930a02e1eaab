/**
 * `npm run stress [-- --stall-warn-ms 50 --out FILE]`: heavy but valid requests against a real
 * node, at the limits its API allows on the demo models, outside the test suite's time.
 *
 * Where `npm run fuzz` sends hostile input (mostly refused), this sends requests that succeed
 * and cost the most: 4,096 characters of speech (digits speak longest), thousands of embedding
 * inputs, a near-full context, a 1024×1024 image, a 700 s transcription, a 20 MB document, ten
 * minutes of video in a chat, bursts of streamed chats; one scenario at a time (a model's first scenario loads it), then all of them
 * at once, twice. The node runs with a low --stall-warn-ms; for each scenario the run reports
 * the statuses, the time, the longest wait of a `GET /models` probe sent every 100 ms, and the
 * stalls the node logged with their suspects. It asserts nothing: it is a measurement.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { ffmpegPath } from "../src/media/ffmpeg.js";
import { createKeys, probeListing, type StallReport, startNode } from "./nodeUnderTest.js";

const ROOT = resolve(import.meta.dirname, "..");
const log = (line: string) => process.stdout.write(`${line}\n`);

const { values: args } = parseArgs({
  options: {
    "stall-warn-ms": { type: "string", default: "50" },
    out: { type: "string", default: "bench-out/stress.json" },
  },
});

const WORDS = "the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches in 1984 and 2025".split(" ");
/** `chars` characters of words and sentence ends, different for each seed. */
function text(chars: number, seed = 1): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = seed; length < chars; i++) {
    const word = WORDS[(i * 7 + 3) % WORDS.length]! + (i % 9 === 0 ? ". " : " ");
    parts.push(word);
    length += word.length;
  }
  return parts.join("").slice(0, chars);
}
const DIGITS = "123456789012345.67 ".repeat(216).slice(0, 4096);

/** A mono 16-bit WAV of a modulated tone. */
function wav(seconds: number, rate = 16000): Buffer {
  const samples = seconds * rate;
  const out = Buffer.alloc(44 + samples * 2);
  out.write("RIFF", 0);
  out.writeUInt32LE(36 + samples * 2, 4);
  out.write("WAVEfmt ", 8);
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE(rate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write("data", 36);
  out.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(8000 * Math.sin(i / 9) * Math.sin(i / 5000)), 44 + i * 2);
  return out;
}

/**
 * Ten minutes of 640×360 video at 10 fps in a few hundred KB (a still picture compresses to almost
 * nothing), an MP4 with its index at the end as cameras write it: small to send, long to decode.
 */
function longVideo(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "hearth-stress-video-"));
  try {
    const path = join(dir, "long.mp4");
    const source = "color=c=gray:s=640x360:r=10:d=600";
    const made = spawnSync(ffmpegPath(), ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", source, "-c:v", "libx264", "-preset", "ultrafast", "-y", path]);
    if (made.status !== 0) throw new Error(`ffmpeg could not make the video: ${made.stderr}`);
    return readFileSync(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const LONG_VIDEO = `data:video/mp4;base64,${longVideo().toString("base64")}`;

type Send = (baseUrl: string, key: string) => Promise<Response>;

const json =
  (path: string, body: unknown): Send =>
  (baseUrl, key) =>
    fetch(`${baseUrl}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
const form =
  (path: string, fields: Record<string, string>, file: { bytes: Buffer; name: string }): Send =>
  (baseUrl, key) => {
    const body = new FormData();
    for (const [name, value] of Object.entries(fields)) body.append(name, value);
    body.append("file", new Blob([new Uint8Array(file.bytes)]), file.name);
    return fetch(`${baseUrl}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body });
  };

const chat = (content: string, extra: Record<string, unknown> = {}) =>
  json("/chat/completions", { model: "hearth-tiny-chat", messages: [{ role: "user", content }], max_tokens: 64, ...extra });
const videoQuestion = () =>
  json("/chat/completions", {
    model: "hearth-tiny-vision",
    max_tokens: 8,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "What happens?" },
          { type: "video_url", video_url: { url: LONG_VIDEO } },
        ],
      },
    ],
  });

/** Each scenario's requests, sent at once. */
const SCENARIOS: { name: string; requests: Send[] }[] = [
  { name: "speech, Kokoro, 4,096 characters of digits (WAV)", requests: [json("/audio/speech", { model: "tts-kokoro", input: DIGITS, response_format: "wav" })] },
  { name: "speech, Kokoro, 4,096 characters of digits (FLAC)", requests: [json("/audio/speech", { model: "tts-kokoro", input: DIGITS, response_format: "flac" })] },
  { name: "speech, VITS, 4,096 characters (MP3)", requests: [json("/audio/speech", { model: "tts-vits", input: text(4096), response_format: "mp3" })] },
  {
    name: "embeddings, transformers.js, 2,048 inputs",
    requests: [json("/embeddings", { model: "hearth-tiny-embedding", input: Array.from({ length: 2048 }, (_, i) => text(100, i)) })],
  },
  {
    name: "embeddings, GGUF, 2,048 inputs of 300 characters",
    requests: [json("/embeddings", { model: "hearth-tiny-embedding-gguf", input: Array.from({ length: 2048 }, (_, i) => text(300, i)) })],
  },
  { name: "chat, a near-full 4k context", requests: [chat(text(3500), { max_tokens: 16 })] },
  { name: "chat, 4 choices with 20 top logprobs", requests: [chat(text(2000), { n: 4, logprobs: true, top_logprobs: 20 })] },
  { name: "chat, 30 streams at once", requests: Array.from({ length: 30 }, () => chat(text(3000), { stream: true })) },
  { name: "image, 1024×1024", requests: [json("/image/generate", { model: "hearth-tiny-sd", prompt: text(500), width: 1024, height: 1024, steps: 4 })] },
  { name: "transcription, a 700 s WAV (22 MB)", requests: [form("/audio/transcriptions", { model: "hearth-tiny-whisper" }, { bytes: wav(700), name: "long.wav" })] },
  { name: "chat with a video part, 10 minutes of video in an MP4 of a few hundred KB", requests: [videoQuestion()] },
  { name: "responses, 20 at once", requests: Array.from({ length: 20 }, () => json("/responses", { model: "hearth-tiny-chat", input: text(3000), max_output_tokens: 8 })) },
];

/** All of the heavy ones at once: what a busy LAN node sees. */
const BURST: Send[] = [
  json("/audio/speech", { model: "tts-kokoro", input: DIGITS, response_format: "wav" }),
  json("/audio/speech", { model: "tts-kokoro", input: text(4096), response_format: "flac" }),
  json("/audio/speech", { model: "tts-vits", input: text(4096), response_format: "mp3" }),
  json("/embeddings", { model: "hearth-tiny-embedding-gguf", input: Array.from({ length: 1024 }, (_, i) => text(300, i)) }),
  json("/embeddings", { model: "hearth-tiny-embedding", input: Array.from({ length: 2048 }, (_, i) => text(100, i)) }),
  json("/image/generate", { model: "hearth-tiny-sd", prompt: text(500), width: 1024, height: 1024, steps: 4 }),
  form("/audio/transcriptions", { model: "hearth-tiny-whisper" }, { bytes: wav(700), name: "long.wav" }),
  form("/augment/text-parser", {}, { bytes: Buffer.from(text(900_000)), name: "notes.md" }),
  videoQuestion(),
  ...Array.from({ length: 16 }, () => chat(text(3000), { stream: true })),
];

interface ScenarioResult {
  name: string;
  requests: number;
  statuses: Record<string, number>;
  seconds: number;
  probeMaxMs: number;
  stalls: number;
  worstStalls: StallReport[];
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-stress-"));
  log(`starting a node on the demo models in ${dataDir} (first start generates them)`);
  const node = await startNode(dataDir, Number(args["stall-warn-ms"]));
  const keys = createKeys(dataDir, 8, true, 100);
  let nextKey = 0;
  const results: ScenarioResult[] = [];
  try {
    const run = async (name: string, requests: Send[]) => {
      const stallsBefore = node.stalls.length;
      const probe = probeListing(node.baseUrl, 100);
      const started = performance.now();
      // One key per scenario: an account's rate limits and holds stay out of the measurement.
      const key = keys[nextKey++ % keys.length]!;
      const statuses = await Promise.all(
        requests.map((send) =>
          send(node.baseUrl, key)
            .then(async (response) => {
              await response.arrayBuffer();
              return response.status;
            })
            .catch(() => 0),
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      const probeMaxMs = Math.max(0, ...(await probe.stop()));
      // A stall is reported at the first tick after it.
      await new Promise((r) => setTimeout(r, 150));
      const stalls = node.stalls.slice(stallsBefore);
      const counts: Record<string, number> = {};
      for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
      const result: ScenarioResult = {
        name,
        requests: requests.length,
        statuses: counts,
        seconds: Number(seconds.toFixed(2)),
        probeMaxMs: Math.round(probeMaxMs),
        stalls: stalls.length,
        worstStalls: [...stalls].sort((a, b) => b.heldMs - a.heldMs).slice(0, 3),
      };
      results.push(result);
      const worst = result.worstStalls[0];
      const suspects = worst ? Object.keys(worst.inFlightCounts ?? Object.fromEntries(worst.inFlight.map((a) => [`${a.kind} ${a.route ?? a.models ?? ""}`.trim(), 1]))) : [];
      log(
        `${name}: ${JSON.stringify(counts)} in ${result.seconds} s; probe max ${result.probeMaxMs} ms; stalls ${stalls.length}` +
          (worst ? `, worst ${worst.heldMs} ms (in flight: ${suspects.join(", ") || "nothing"}${worst.startedDuring ? `; ${worst.startedDuring} arrived meanwhile` : ""})` : ""),
      );
    };
    for (const { name, requests } of SCENARIOS) await run(name, requests);
    await run(`all at once (${BURST.length} requests)`, BURST);
    await run(`all at once again (${BURST.length} requests)`, BURST);
  } finally {
    node.child.kill("SIGTERM");
    await new Promise((r) => node.child.once("exit", r));
    rmSync(dataDir, { recursive: true, force: true });
  }
  const out = resolve(ROOT, args.out!);
  mkdirSync(resolve(out, ".."), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ stallWarnMs: Number(args["stall-warn-ms"]), scenarios: results }, null, 2)}\n`);
  log(`written to ${out}`);
}

await main();
