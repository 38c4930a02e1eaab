/**
 * Prompt-cache benchmark: time to first token for a long shared prefix, with and without a
 * cache hit, through the real HTTP server and streaming API.
 *
 *   npm run bench:cache -- [--model tiny|qwen05b] [--prefix-tokens 2000] [--runs 5] [--threads 1]
 *
 * tiny: the 1 MB demo model (fast everywhere; shows the mechanism). qwen05b: random weights
 * in the Qwen2.5-0.5B shape (about 506 MB Q8_0, generated once into data/bench-models),
 * whose prompt evaluation costs what a real 0.5B model's does.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { ModelEntry } from "../src/config/modelRegistry.js";
import { ServerConfig } from "../src/config/serverSettings.js";
import { QWEN25_05B_SHAPE, TINY_CHAT, writeChatModel } from "../src/fixtures/gguf/chatModel.js";
import { createLogger } from "../src/logger.js";
import { startServer } from "../src/server.js";
import { createAccount } from "../src/store/accounts.js";
import { createApiKey } from "../src/store/apiKeys.js";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: "tiny" },
    "prefix-tokens": { type: "string", default: "2000" },
    runs: { type: "string", default: "5" },
    threads: { type: "string", default: "1" },
  },
});
const shapes = { tiny: TINY_CHAT, qwen05b: QWEN25_05B_SHAPE } as const;
const shapeName = values.model as keyof typeof shapes;
if (!(shapeName in shapes)) throw new Error(`--model: one of ${Object.keys(shapes).join(", ")}`);
const prefixTokens = Number(values["prefix-tokens"]);
const runs = Number(values.runs);

const modelsDir = resolve("data/bench-models");
mkdirSync(modelsDir, { recursive: true });
const file = join(modelsDir, `${shapeName}.gguf`);
if (!existsSync(file)) {
  process.stderr.write(`writing ${file} ...\n`);
  await writeChatModel(file, shapes[shapeName]);
}

const dataDir = mkdtempSync(join(tmpdir(), "hearth-bench-cache-"));
const config = ServerConfig.parse({ host: "127.0.0.1", port: 0, dataDir, configPath: join(dataDir, "none.json"), logLevel: "warn" });
const entry = ModelEntry.parse({
  id: "bench",
  type: "text",
  backend: "llama",
  file,
  // One thread by default: llama.cpp's threads spin-wait on each other, which collapses on a busy shared CPU.
  llama: { contextSize: Math.ceil(prefixTokens * 1.25) + 256, sequences: 2, threads: Number(values.threads) },
});
const server = await startServer(config, { modelsConfig: { models: [entry] }, characters: [], logger: createLogger("warn") });
const account = createAccount(server.db, "bench");
const { secret } = createApiKey(server.db, { accountId: account.id, description: "bench", keyType: "ADMIN" });

const WORDS = "river stone light harbor window garden signal paper quiet engine market silver winter orchard lantern bridge".split(" ");
/** A document of roughly `tokens` tokens, different for every seed. */
function documentText(seed: number, tokens: number): string {
  let state = seed * 2654435761;
  const words: string[] = [];
  // The demo tokenizers (few merges) spend about 4 tokens per word of this list.
  for (let i = 0; i < tokens / 4; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    words.push(WORDS[state % WORDS.length]!);
  }
  return `Document ${seed}: ${words.join(" ")}.`;
}

interface Measure {
  ttftMs: number;
  promptTokens: number;
  cachedTokens: number;
}
/** Streams one request over node:http (no body timeout: a slow CPU may take minutes over a long prompt). */
function timeToFirstToken(documentSeed: number, question: string): Promise<Measure> {
  const body = JSON.stringify({
    model: "bench",
    messages: [
      { role: "system", content: documentText(documentSeed, prefixTokens) },
      { role: "user", content: question },
    ],
    max_tokens: 2,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  return new Promise((resolvePromise, reject) => {
    const started = performance.now();
    let ttftMs = NaN;
    let text = "";
    const req = request(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
    });
    req.on("response", (res) => {
      res.setEncoding("utf8");
      res.on("data", (piece: string) => {
        text += piece;
        if (Number.isNaN(ttftMs) && /"content":"[^"]/.test(text)) ttftMs = performance.now() - started;
      });
      res.on("end", () => {
        const events = text
          .split("\n")
          .filter((line) => line.startsWith("data: {"))
          .map((line) => JSON.parse(line.slice(6)));
        const usage = events.find((e) => e.usage)?.usage;
        if (!usage) return reject(new Error(`no usage in the stream (status ${res.statusCode}): ${text.slice(0, 300)}`));
        resolvePromise({ ttftMs, promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details.cached_tokens });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
try {
  await timeToFirstToken(999, "warm up the model"); // loads the model; not measured
  const misses: Measure[] = [];
  for (let i = 0; i < runs; i++) misses.push(await timeToFirstToken(1000 + i, `Question ${i}?`));
  await timeToFirstToken(7, "Question zero?"); // writes the shared prefix into a sequence
  const hits: Measure[] = [];
  for (let i = 0; i < runs; i++) hits.push(await timeToFirstToken(7, `Question ${i + 1}?`));

  const row = (label: string, ms: Measure[]) =>
    `${label.padEnd(10)} ttft median ${median(ms.map((m) => m.ttftMs))
      .toFixed(1)
      .padStart(8)} ms   min ${Math.min(...ms.map((m) => m.ttftMs))
      .toFixed(1)
      .padStart(8)} ms   prompt ${median(ms.map((m) => m.promptTokens))} tokens, cached ${median(ms.map((m) => m.cachedTokens))}`;
  process.stdout.write(
    [
      `model ${shapeName} (${file}), ${runs} runs each, ${server.models.list()[0]!.llama.contextSize}-token context, ${values.threads} thread(s)`,
      row("cache miss", misses),
      row("cache hit", hits),
      `speed-up of the first token: ${(median(misses.map((m) => m.ttftMs)) / median(hits.map((m) => m.ttftMs))).toFixed(1)}x`,
      "",
    ].join("\n"),
  );
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}
