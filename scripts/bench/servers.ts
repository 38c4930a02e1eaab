/**
 * The two servers the comparison runs side by side, each as its own process on loopback, the way a
 * user would start them: Hearth (`bin/hearth.cjs serve`) and llama.cpp's `llama-server`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../src/config/packageRoot.js";
import type { LimitOverrides } from "../../src/limits/tiers.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { grantCredits, toMicros } from "../../src/store/ledger.js";
import { databasePath, openStore } from "../../src/store/Store.js";
import { type HttpEndpoint, requestOnce } from "./http.js";

export interface ServerSettings {
  modelFile: string;
  threads: number;
  /** Parallel sequences (llama-server: slots). */
  sequences: number;
  /** Tokens per sequence (llama-server gets sequences x this as -c, which it splits across slots). */
  contextSize: number;
  /** Flash attention for both; unset: each server's default ("auto" for both). */
  flashAttention?: "on" | "off";
  /** Hearth's libuv pool size (UV_THREADPOOL_SIZE), which node-llama-cpp's decodes run on; unset: as `hearth serve` chooses it. */
  uvThreads?: number;
  /** Hearth only: more `llama` settings for its model entry. */
  hearthLlama?: Record<string, unknown>;
}

export interface RunningServer {
  name: "Hearth" | "llama-server";
  endpoint: HttpEndpoint;
  /** From spawning the process to its first successful answer (Hearth: GET /models, the model not loaded yet; llama-server: /health, after loading). */
  startedInMs: number;
  /** Resident memory of the server process now, and its split (Linux /proc; null: not readable). */
  memory(): ProcessMemory | null;
  /** Hearth only: how its engine batched decode steps so far (GET /admin/models, `decode`). */
  decodeStats?(): Promise<unknown>;
  /** llama.cpp decode calls so far and how many sequences took part in them, summed (null: not readable). */
  decodeCounters(): Promise<DecodeCounters | null>;
  stop(): Promise<void>;
}

/**
 * What a server's decode loop did, the same count on both: llama_decode calls, and the sequences
 * (llama-server: busy slots) summed over them. Per generated token, the calls say how often the
 * loop went round; per call, the sequences say how full each step was.
 */
export interface DecodeCounters {
  decodeCalls: number;
  sequenceSlots: number;
}

const START_TIMEOUT_MS = 180_000;

export async function startHearth(settings: ServerSettings): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), "hearth-vs-"));
  const dataDir = join(dir, "data");
  const configPath = join(dir, "models.config.json");
  const entry = {
    id: "bench",
    type: "text",
    backend: "llama",
    file: settings.modelFile,
    llama: {
      contextSize: settings.contextSize,
      threads: settings.threads,
      sequences: settings.sequences,
      ...(settings.flashAttention ? { flashAttention: settings.flashAttention === "on" } : {}),
      ...settings.hearthLlama,
    },
  };
  writeFileSync(configPath, JSON.stringify({ models: [entry] }, null, 2));
  // The key is made in the store before the server starts: no rate limit (a load generator exceeds
  // any per-minute table by design) and credit it never runs out of.
  const db = openStore(databasePath(dataDir));
  const account = createAccount(db, "bench");
  grantCredits(db, account.id, "USD", toMicros(1_000_000), "bench");
  const unlimited: LimitOverrides = { "*": { rpm: Number.MAX_SAFE_INTEGER, tpm: Number.MAX_SAFE_INTEGER } };
  const { secret } = createApiKey(db, { accountId: account.id, description: "bench", keyType: "INFERENCE", rateLimitOverrides: JSON.stringify(unlimited) });
  // The operator's key reads GET /admin/models: how the engine batched its decode steps.
  const { secret: operatorKey } = createApiKey(db, { accountId: account.id, description: "bench operator", keyType: "ADMIN", operator: true });
  db.close();

  const port = await freePort();
  const spawnedAt = performance.now();
  const child = spawn(
    process.execPath,
    [
      ...(process.env.HEARTH_BENCH_CPU_PROF
        ? ["--cpu-prof", "--cpu-prof-interval", process.env.HEARTH_BENCH_CPU_PROF_INTERVAL ?? "1000", "--cpu-prof-dir", process.env.HEARTH_BENCH_CPU_PROF]
        : []),
      join(PACKAGE_ROOT, "bin", "hearth.cjs"),
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--data-dir",
      dataDir,
      "--config",
      configPath,
      "--log-level",
      "warn",
    ],
    {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, NO_COLOR: "1", ...(settings.uvThreads ? { UV_THREADPOOL_SIZE: String(settings.uvThreads) } : {}) },
    },
  );
  const endpoint: HttpEndpoint = { baseUrl: `http://127.0.0.1:${port}/api/v1`, key: secret, model: "bench" };
  await waitUntilServing(child, `${endpoint.baseUrl}/models`, "Hearth", { authorization: `Bearer ${secret}` });
  const decodeStats = async () => {
    const response = await requestOnce(`${endpoint.baseUrl}/admin/models`, { headers: { authorization: `Bearer ${operatorKey}` } });
    const body = JSON.parse(response.text) as { data: { id: string; decode?: { batches: number; sequencesPerBatch: Record<string, number> } | null }[] };
    return body.data.find((m) => m.id === "bench")?.decode ?? undefined;
  };
  return {
    name: "Hearth",
    endpoint,
    startedInMs: performance.now() - spawnedAt,
    memory: () => processMemory(child.pid),
    decodeStats,
    decodeCounters: async () => {
      const decode = await decodeStats();
      if (!decode) return null;
      const sequenceSlots = Object.entries(decode.sequencesPerBatch).reduce((sum, [sequences, calls]) => sum + Number(sequences) * calls, 0);
      return { decodeCalls: decode.batches, sequenceSlots };
    },
    stop: async () => {
      await stopProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startLlamaServer(binary: string, settings: ServerSettings): Promise<RunningServer> {
  const port = await freePort();
  const threads = String(settings.threads);
  const spawnedAt = performance.now();
  const child = spawn(
    binary,
    [
      "-m",
      settings.modelFile,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "-t",
      threads,
      "-tb",
      threads,
      "-np",
      String(settings.sequences),
      ...(settings.flashAttention ? ["-fa", settings.flashAttention] : []),
      "-c",
      String(settings.sequences * settings.contextSize),
      // No GPU offload unless the build has one: the same device as Hearth's node-llama-cpp picks.
      "--no-webui",
      // GET /metrics: its decode calls and busy slots per call, to set beside Hearth's.
      "--metrics",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const endpoint: HttpEndpoint = { baseUrl: `http://127.0.0.1:${port}/v1`, model: "bench" };
  await waitUntilServing(child, `http://127.0.0.1:${port}/health`, "llama-server");
  return {
    name: "llama-server",
    endpoint,
    startedInMs: performance.now() - spawnedAt,
    memory: () => processMemory(child.pid),
    decodeCounters: async () => parseLlamaServerDecodeCounters((await requestOnce(`http://127.0.0.1:${port}/metrics`)).text),
    stop: () => stopProcess(child),
  };
}

/**
 * llama-server's Prometheus text: `llamacpp:n_decode_total` counts its llama_decode calls, and the
 * gauge `llamacpp:n_busy_slots_per_decode` is the average over all of them, so the product is the sum.
 */
export function parseLlamaServerDecodeCounters(text: string): DecodeCounters | null {
  const value = (name: string) => {
    const match = new RegExp(`^llamacpp:${name} ([0-9.eE+-]+)$`, "m").exec(text);
    return match ? Number(match[1]) : undefined;
  };
  const decodeCalls = value("n_decode_total");
  const busyPerCall = value("n_busy_slots_per_decode");
  if (decodeCalls === undefined || busyPerCall === undefined) return null;
  return { decodeCalls, sequenceSlots: Math.round(busyPerCall * Math.max(decodeCalls, 1)) };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitUntilServing(child: ChildProcess, url: string, name: string, headers: Record<string, string> = {}): Promise<void> {
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<never>((_, reject) => child.once("exit", (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before serving:\n${stderr}`))));
  const deadline = Date.now() + START_TIMEOUT_MS;
  const poll = async () => {
    while (Date.now() < deadline) {
      try {
        const { status } = await requestOnce(url, { headers });
        if (status === 200) return;
      } catch {
        // Not listening yet.
      }
      // Often enough that the start time it measures is not rounded up by much.
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`${name} did not serve ${url} within ${START_TIMEOUT_MS / 1000} s:\n${stderr}`);
  };
  await Promise.race([poll(), exited]);
  // Keep draining stderr so the child never blocks on a full pipe.
  child.stderr?.resume();
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Resident memory of a process, split as the kernel counts it: anonymous pages (heaps, stacks,
 * JavaScript's heap, llama.cpp's buffers) and file-backed pages (binaries, libraries and the
 * memory-mapped model weights). Where two servers differ, the split says which kind of memory it is.
 */
export interface ProcessMemory {
  rssBytes: number;
  anonBytes: number;
  fileBytes: number;
}

export function processMemory(pid: number | undefined): ProcessMemory | null {
  if (pid === undefined) return null;
  try {
    return parseProcStatusMemory(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return null;
  }
}

/** VmRSS, RssAnon and RssFile of a /proc/<pid>/status text, in bytes (null when VmRSS is missing). */
export function parseProcStatusMemory(status: string): ProcessMemory | null {
  const kib = (field: string) => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status);
    return match ? Number(match[1]) * 1024 : null;
  };
  const rssBytes = kib("VmRSS");
  if (rssBytes === null) return null;
  return { rssBytes, anonBytes: kib("RssAnon") ?? 0, fileBytes: kib("RssFile") ?? 0 };
}
