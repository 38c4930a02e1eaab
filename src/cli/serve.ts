import type { Command } from "commander";
import nodeModule from "node:module";
import { loadServerConfig, SERVER_SETTINGS, type ServerSettingName } from "../config/serverSettings.js";
import { SECRET_ENV } from "../config/walletConfig.js";
import { addSettingOption, settingFlags, type SettingFlags } from "./options.js";
import { formatBytes } from "../models/formatBytes.js";
import { describeLibuvPool } from "../engines/llama/threadsForBatch.js";
import { describeMallocSettings } from "./mallocSettings.js";
import { chooseLogFormat, createLogger, isPrettyAvailable } from "../logger.js";
import type { RunningServer } from "../server.js";
import { out, progressBar } from "./ui.js";

export function registerServeCommand(program: Command): void {
  const serve = program.command("serve").description("start the HTTP server (the default demo models are generated on first start)");
  // Every server setting is a flag: docs/configuration.md's table lists them all.
  for (const name of Object.keys(SERVER_SETTINGS) as ServerSettingName[]) addSettingOption(serve, name);
  serve.addHelpText(
    "after",
    [
      "",
      "Secrets come from the environment only:",
      `  ${SECRET_ENV.evmSettlerKey}        key of the account that submits Base top-up transfers (onchain/deferred settlement)`,
      `  ${SECRET_ENV.solanaFeePayerKey}   base58 secret key of the Solana fee payer (onchain/deferred settlement)`,
      "The wallet config file's format is in docs/wallets.md (section 'The wallet config file').",
      "",
      "UV_THREADPOOL_SIZE sizes libuv's thread pool, which llama.cpp's decodes run on; unset, it is one",
      "thread on a Linux machine without a GPU device, else libuv's 4 (docs/operations.md, 'libuv's thread pool').",
    ].join("\n"),
  );
  serve.action(async (flags: SettingFlags) => {
    const config = loadServerConfig(settingFlags(flags));
    const prettyAvailable = isPrettyAvailable();
    if (config.logFormat === "pretty" && !prettyAvailable) process.stderr.write("hearth: pino-pretty is not installed (npm install); logging JSON lines\n");
    const logFormat = chooseLogFormat({ requested: config.logFormat, isTerminal: process.stderr.isTTY === true, prettyAvailable });
    const logger = createLogger(config.logLevel, { format: logFormat });
    // Loaded on demand so `hearth --help` and the key commands start instantly.
    const { startServer } = await import("../server.js");
    const progress = progressBar("Generating demo models");
    const running = await startServer(config, { logger, onDemoModelProgress: (done, total, path) => progress.update(done, total, path) }).finally(() => progress.stop());
    const dataDirFlag = config.dataDir === loadServerConfig({}).dataDir ? "" : ` --data-dir ${config.dataDir}`;
    const exampleModel = running.models.list()[0]?.id ?? "MODEL";
    process.stdout.write(
      [
        `Hearth is listening on ${out.bold(out.cyan(running.baseUrl))}`,
        `Models: ${
          running.models
            .list()
            .map((m) => m.id)
            .join(", ") || "(none)"
        }`,
        ...(running.metricsUrl ? [`Metrics (no auth): ${running.metricsUrl}`] : []),
        `Wallet sign-ins for: ${running.wallet.origins
          .list()
          .map((o) => o.origin)
          .join(", ")}; top-ups: ${running.wallet.topUps.mode ?? "not enabled"}`,
        `Create an API key:  ${out.green(`npx hearth keys create --name me --operator --usd 10${dataDirFlag}`)}`,
        `Then: curl ${running.baseUrl}/chat/completions -H "Authorization: Bearer <key>" -H "Content-Type: application/json" \\`,
        `        -d '{"model":"${exampleModel}","messages":[{"role":"user","content":"Hello"}]}'`,
        `Web console: ${running.url}/ (log in with the operator key, or an account admin key for its own account)`,
        "",
      ].join("\n"),
    );
    const pool = describeLibuvPool();
    // node-llama-cpp's decodes run on this pool; its size decides one CPU stream's speed (bin/libuvPool.cjs).
    running.logger.info({ libuvThreads: pool.size, chosenBy: pool.chosenBy }, `libuv thread pool: ${pool.size} (${pool.chosenBy})`);
    if (process.platform === "linux") {
      // What glibc keeps of freed memory decides how far a long-running node's memory creeps (bin/glibcMalloc.cjs).
      const malloc = describeMallocSettings();
      running.logger.info({ malloc: malloc.settings, chosenBy: malloc.chosenBy }, `memory allocator: ${malloc.settings} (${malloc.chosenBy})`);
    }
    // Node writes its compile cache (bin/hearth.cjs) at exit; a server may run for weeks, or be killed.
    (nodeModule as { flushCompileCache?: () => void }).flushCompileCache?.();
    await preloadModels(running, config.preload);
    const server = running;
    const shutdown = (signal: string) => {
      server.logger.info({ signal }, "shutting down");
      server.close().then(
        () => process.exit(0),
        (error: unknown) => {
          server.logger.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.once("SIGTERM", () => shutdown("SIGTERM"));
    process.once("SIGINT", () => shutdown("SIGINT"));
  });
}

/**
 * Loads the --preload models one after the other (a progress bar in a terminal, a line per model
 * either way). A model that fails is reported with its cause and the server keeps serving.
 */
async function preloadModels(running: RunningServer, requested: readonly string[]): Promise<void> {
  if (requested.length === 0) return;
  const known = running.models.list().map((m) => m.id);
  const ids = requested.includes("all") ? known : requested;
  const progress = progressBar("Loading models");
  progress.update(0, ids.length);
  const lines: string[] = [];
  for (const [index, id] of ids.entries()) {
    const started = performance.now();
    try {
      if (!known.includes(id)) throw new Error(`no model "${id}" in the registry (configured: ${known.join(", ")})`);
      const status = await running.models.load(id);
      const memory = status.memory ? ` (${formatBytes(status.memory.ramBytes + status.memory.vramBytes)})` : "";
      lines.push(`${out.green("Loaded")} ${id}${memory} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    } catch (error) {
      lines.push(`${out.red("Could not load")} ${id}: ${(error as Error).message}`);
    }
    progress.update(index + 1, ids.length, id);
  }
  progress.stop();
  process.stdout.write(`${lines.join("\n")}\n`);
}
