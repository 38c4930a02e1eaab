/**
 * Metrics load check: starts a server with the demo tiny chat model, scrapes GET /metrics,
 * runs concurrent streaming chats, scrapes again and prints how the chat histograms moved
 * (count, sum, mean), next to what the client measured.
 *
 *   npm run bench:metrics -- [--requests 32] [--concurrency 8] [--max-tokens 64]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { loadModelsConfig } from "../src/models/loadModelsConfig.js";
import { PACKAGE_ROOT } from "../src/config/packageRoot.js";
import { ServerConfig } from "../src/config/serverSettings.js";
import { createLogger } from "../src/logger.js";
import { startServer } from "../src/server.js";
import { createAccount } from "../src/store/accounts.js";
import { createApiKey } from "../src/store/apiKeys.js";
import { grantCredits, toMicros } from "../src/store/ledger.js";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "32" },
    concurrency: { type: "string", default: "8" },
    "max-tokens": { type: "string", default: "64" },
  },
});
const requests = Number(values.requests);
const concurrency = Number(values.concurrency);
const maxTokens = Number(values["max-tokens"]);

const dataDir = mkdtempSync(join(tmpdir(), "hearth-bench-metrics-"));
const registry = loadModelsConfig(resolve(PACKAGE_ROOT, "models.config.json"), dataDir);
const entry = registry.models.find((m) => m.generate === "tiny-chat");
if (!entry) throw new Error("the bundled registry has no tiny-chat demo model");
const config = ServerConfig.parse({ host: "127.0.0.1", port: 0, dataDir, configPath: join(dataDir, "none.json"), logLevel: "warn" });
// The demo model is generated into the temporary data directory, as `hearth serve` does on first start.
const server = await startServer(config, { modelsConfig: { models: [entry] }, characters: [], logger: createLogger("warn") });
const account = createAccount(server.db, "bench");
grantCredits(server.db, account.id, "USD", toMicros(1000), "bench");
const { secret } = createApiKey(server.db, {
  accountId: account.id,
  description: "bench",
  keyType: "ADMIN",
  rateLimitOverrides: JSON.stringify({ "*": { rpm: 100_000, tpm: 100_000_000 } }),
});

const HISTOGRAMS = [
  "hearth_chat_time_to_first_token_seconds",
  "hearth_chat_inter_token_latency_seconds",
  "hearth_chat_queue_wait_seconds",
  "hearth_chat_tokens_per_second",
  "hearth_http_request_duration_seconds",
] as const;

/** `_count` and `_sum` of each histogram above for the model (or the chat route), from the exposition text. */
async function scrape(): Promise<Record<string, { count: number; sum: number }>> {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${secret}` } });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const text = await res.text();
  const read = (series: string) => {
    const line = text.split("\n").find((l) => l.startsWith(series));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
  };
  const out: Record<string, { count: number; sum: number }> = {};
  for (const name of HISTOGRAMS) {
    const labels = name.startsWith("hearth_http") ? `{method="POST",route="/api/v1/chat/completions",status="200"}` : `{model="${entry!.id}"}`;
    out[name] = { count: read(`${name}_count${labels}`), sum: read(`${name}_sum${labels}`) };
  }
  out.hearth_chat_completion_tokens_total = { count: read(`hearth_chat_completion_tokens_total{model="${entry!.id}"}`), sum: 0 };
  return out;
}

/** One streaming chat; the client's own time to first content and the chunks received. */
async function chat(i: number): Promise<{ ttftMs: number; chunks: number }> {
  const started = performance.now();
  const res = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model: entry!.id, stream: true, max_tokens: maxTokens, temperature: 0.8, seed: i + 1, messages: [{ role: "user", content: `Tell story number ${i}` }] }),
  });
  if (res.status !== 200) throw new Error(`chat ${i}: ${res.status} ${await res.text()}`);
  let ttftMs = NaN;
  let chunks = 0;
  const decoder = new TextDecoder();
  for await (const part of res.body!) {
    const text = decoder.decode(part, { stream: true });
    if (Number.isNaN(ttftMs) && /"content":"[^"]/.test(text)) ttftMs = performance.now() - started;
    chunks += text.split("data: ").length - 1;
  }
  return { ttftMs, chunks };
}

// Load the model first so the load time is not the first request's TTFT.
await chat(-1);
const before = await scrape();
const started = performance.now();
const results: { ttftMs: number; chunks: number }[] = [];
let next = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < requests) results.push(await chat(next++));
  }),
);
const wallMs = performance.now() - started;
const after = await scrape();
await server.close();
rmSync(dataDir, { recursive: true, force: true });

const fmt = (n: number, digits = 4) => (Number.isFinite(n) ? n.toFixed(digits) : "-");
console.log(
  `hearth bench:metrics: ${requests} streaming chats, ${concurrency} at a time, max_tokens ${maxTokens}, model ${entry.id} (${entry.llama.sequences} sequences), ${fmt(wallMs / 1000, 2)} s wall`,
);
console.log("");
console.log(["histogram".padEnd(42), "count before", "count after", "sum before", "sum after", "mean of the run"].join("  "));
for (const name of HISTOGRAMS) {
  const b = before[name]!;
  const a = after[name]!;
  const mean = (a.sum - b.sum) / (a.count - b.count);
  console.log([name.padEnd(42), String(b.count).padStart(12), String(a.count).padStart(11), fmt(b.sum).padStart(10), fmt(a.sum).padStart(9), fmt(mean).padStart(15)].join("  "));
}
const tokens = after.hearth_chat_completion_tokens_total!.count - before.hearth_chat_completion_tokens_total!.count;
const clientTtft = results.map((r) => r.ttftMs).filter(Number.isFinite);
console.log("");
console.log(`completion tokens counted: ${tokens} (${fmt(tokens / (wallMs / 1000), 1)} tokens/s aggregate)`);
console.log(
  `client-side TTFT mean: ${fmt(clientTtft.reduce((s, t) => s + t, 0) / clientTtft.length / 1000)} s over ${clientTtft.length} requests (includes HTTP and the route's work before the engine)`,
);
