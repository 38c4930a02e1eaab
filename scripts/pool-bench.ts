/**
 * `node --import tsx scripts/pool-bench.ts [--nodes 2] [--sequences 8]`: a gateway Hearth in
 * front of a pool of Hearth nodes on loopback, for `npm run bench -- --url …` (docs/scaling.md).
 *
 * Each node runs in a process of its own (as on separate boxes, each has its own event loop) with
 * the bench's tiny generated model and one inference key for the gateway; the gateway runs here,
 * its model `pool` an upstream pool of the nodes. The script prints the bench commands for the
 * gateway and for node 0 directly, then serves until Ctrl-C.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Command } from "commander";
import { ModelEntry } from "../src/config/modelRegistry.js";
import { ServerConfig } from "../src/config/serverSettings.js";
import type { LimitOverrides } from "../src/limits/tiers.js";
import { createLogger } from "../src/logger.js";
import { type RunningServer, startServer } from "../src/server.js";
import { createAccount } from "../src/store/accounts.js";
import { createApiKey } from "../src/store/apiKeys.js";
import { grantCredits, toMicros } from "../src/store/ledger.js";
import { ensureGeneratedModel } from "./bench/models.js";

/** A load generator exceeds any per-minute table by design. */
const UNLIMITED: LimitOverrides = { "*": { rpm: Number.MAX_SAFE_INTEGER, tpm: Number.MAX_SAFE_INTEGER } };

interface Started {
  server: RunningServer;
  key: string;
  dispose(): Promise<void>;
}

/** A Hearth on a free loopback port with a temporary data directory and one unlimited inference key with ample credit. */
async function startHearth(models: ModelEntry[]): Promise<Started> {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-pool-bench-"));
  const config = ServerConfig.parse({ host: "127.0.0.1", port: 0, dataDir, configPath: join(dataDir, "unused.json"), logLevel: "warn" });
  const server = await startServer(config, { modelsConfig: { models }, gpu: false, logger: createLogger("warn") });
  const account = createAccount(server.db, "pool bench");
  grantCredits(server.db, account.id, "USD", toMicros(1_000_000), "pool bench");
  const { secret } = createApiKey(server.db, { accountId: account.id, description: "pool bench", keyType: "INFERENCE", rateLimitOverrides: JSON.stringify(UNLIMITED) });
  return {
    server,
    key: secret,
    dispose: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Child mode: one node; prints its URL and key as one JSON line, then serves until killed. */
async function runNode(sequences: number): Promise<void> {
  const model = await ensureGeneratedModel("tiny");
  const entry = ModelEntry.parse({ id: "tiny", type: "text", backend: "llama", file: model.path, llama: { contextSize: 2048, sequences, threads: 1, gpuLayers: 0 } });
  const node = await startHearth([entry]);
  process.stdout.write(`${JSON.stringify({ baseUrl: node.server.baseUrl, key: node.key })}\n`);
  const stop = () => void node.dispose().finally(() => process.exit(0));
  process.on("SIGTERM", stop).on("SIGINT", stop);
}

function spawnNode(sequences: number): Promise<{ child: ChildProcess; baseUrl: string; key: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", import.meta.filename, "--node", "--sequences", String(sequences)], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`a node exited with ${code} before it started`)));
    createInterface({ input: child.stdout! }).once("line", (line) => resolve({ child, ...(JSON.parse(line) as { baseUrl: string; key: string }) }));
  });
}

async function main(): Promise<void> {
  const options = new Command()
    .option("--nodes <n>", "Hearth nodes in the pool", (v) => Number.parseInt(v, 10), 2)
    .option("--sequences <n>", "parallel sequences per node", (v) => Number.parseInt(v, 10), 8)
    .option("--node", "(internal) run one node")
    .parse()
    .opts<{ nodes: number; sequences: number; node?: boolean }>();
  if (options.node) return runNode(options.sequences);

  // Generated once here, not by the nodes at the same time.
  await ensureGeneratedModel("tiny");
  const nodes = await Promise.all(Array.from({ length: options.nodes }, () => spawnNode(options.sequences)));
  const pool = ModelEntry.parse({
    id: "pool",
    type: "text",
    backend: "upstream",
    upstream: { model: "tiny", contextSize: 2048, replicas: nodes.map((node) => ({ baseUrl: node.baseUrl, apiKey: node.key })) },
  });
  const gateway = await startHearth([pool]);
  const log = (line: string) => process.stdout.write(`${line}\n`);
  log(`gateway ${gateway.server.baseUrl} in front of ${nodes.length} node(s): ${nodes.map((n) => n.baseUrl).join(", ")}`);
  log(`through the gateway:  npm run bench -- --url ${gateway.server.baseUrl} --model pool --key ${gateway.key} --concurrency 8`);
  log(`node 0 directly:      npm run bench -- --url ${nodes[0]!.baseUrl} --model tiny --key ${nodes[0]!.key} --concurrency 8`);
  const stop = async () => {
    await gateway.dispose();
    for (const node of nodes) node.child.kill("SIGTERM");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop()).on("SIGINT", () => void stop());
}

await main();
