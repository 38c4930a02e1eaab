/**
 * `npm run bench [-- options]`: streaming chat benchmark with vLLM's metric names.
 *
 * The same greedy workload runs in-process on node-llama-cpp (the floor), through Hearth's
 * LlamaChatEngine, and over HTTP/SSE against a Hearth server, alternating targets at each
 * concurrency level so slow drift on the machine hits them alike. The ratios of their
 * output tok/s attribute the cost to the engine and to the HTTP layer. See docs/bench.md.
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { ModelEntry } from "../src/config/modelRegistry.js";
import { PACKAGE_ROOT } from "../src/config/packageRoot.js";
import { describeLibuvPool } from "../src/engines/llama/threadsForBatch.js";
import { httpTarget, startBenchServer } from "./bench/http.js";
import { loadEngineTarget, loadLlamaTarget, type ContextInfo, type Target } from "./bench/inProcess.js";
import { allStartedBeforeAnyFinished, computeMetrics } from "./bench/metrics.js";
import { ensureGeneratedModel, type ModelFile } from "./bench/models.js";
import { MODE_LABELS, parseOptions, type BenchOptions, type Mode } from "./bench/options.js";
import { computeRatios, nativeCallFigures, ratiosTable, resultsTable, summaryLine, type ScenarioResult } from "./bench/report.js";
import { pooledTable, poolReports, readReports } from "./bench/pool.js";
import { runVisionBench } from "./bench/vision.js";
import { runVersusLlamaServer } from "./bench/vsLlamaServer.js";
import { buildRequests, runConcurrent } from "./bench/workload.js";

const GPU = "auto";
/** Tokens per warm-up request: enough to load the model lazily and fill every sequence's KV prefix. */
const WARMUP_TOKENS = 4;
/** Warm-up prompts are numbered from here so they never share a measured request's prompt. */
const WARMUP_OFFSET = 1_000_000;

const log = (line: string) => process.stdout.write(`${line}\n`);

async function main(options: BenchOptions): Promise<void> {
  if (options.pool) {
    log(pooledTable(poolReports(readReports(options.pool))));
    return;
  }
  if (options.vision) {
    const given = process.argv.includes("--max-tokens");
    const result = await runVisionBench({ requests: options.requests ?? 8, maxTokens: given ? options.maxTokens : 8, log });
    if (options.json) writeFileSync(options.json, `${JSON.stringify({ date: new Date().toISOString(), environment: environment(), vision: result }, null, 2)}\n`);
    return;
  }
  if (options.vsLlamaServer) {
    const model = options.modelFile ? { path: options.modelFile, bytes: statSync(options.modelFile).size } : await ensureGeneratedModel(options.generate);
    await runVersusLlamaServer({
      model,
      threads: options.threads ?? 0,
      rounds: options.rounds,
      maxTokens: options.maxTokens,
      contextSize: options.contextSize,
      promptTokens: options.promptTokens,
      scenarios: options.scenarios,
      flashAttention: options.flashAttention,
      uvThreads: options.uvThreads,
      hearthLlama: options.hearthLlama,
      llamaServer: options.llamaServer,
      json: options.json,
      log,
    });
    return;
  }
  const needsModelFile = !options.url || options.modes.some((mode) => mode !== "http");
  const modelFile: ModelFile | undefined = !needsModelFile
    ? undefined
    : options.modelFile
      ? { path: options.modelFile, bytes: statSync(options.modelFile).size }
      : await ensureGeneratedModel(options.generate);
  // One thread for the tiny model: every extra llama.cpp thread costs a fixed sync delay per
  // token, far above its compute. Other models get Hearth's default (0: one per core).
  const threads = options.threads ?? (modelFile && !options.modelFile && options.generate === "tiny" ? 1 : 0);
  const entry = ModelEntry.parse({
    id: options.model ?? "bench",
    type: "text",
    backend: "llama",
    file: modelFile?.path ?? "unused.gguf",
    llama: { contextSize: options.contextSize, threads, sequences: options.sequences, batchSize: options.batchSize },
  });
  log(`model: ${modelFile ? `${modelFile.path} (${(modelFile.bytes / 2 ** 20).toFixed(1)} MiB)` : options.model}`);
  const pool = describeLibuvPool();
  // The in-process targets and the bench's own server decode on this process's pool.
  log(`libuv thread pool of this process: ${pool.size} (${pool.chosenBy})`);

  const targets = new Map<Mode, Target>();
  try {
    const context = await loadTargets(options, entry, targets);
    for (const [mode, target] of targets) {
      const warmup = buildRequests(entry.llama.sequences, WARMUP_TOKENS, WARMUP_OFFSET);
      await runConcurrent(target.run, warmup, warmup.length);
      log(`warmed up ${MODE_LABELS[mode]}`);
    }

    // Other work on the machine slows every target; the load average says how much to trust a run.
    const load = { before: loadavg()[0]!, after: Number.NaN };
    log(`load average (1 min) before the scenarios: ${load.before.toFixed(2)} on ${cpus().length} cores`);
    const results = await runScenarios(targets, options);
    load.after = loadavg()[0]!;
    log(`load average (1 min) after the scenarios: ${load.after.toFixed(2)}`);

    const ratios = computeRatios(results);
    log(`\n${options.rounds > 1 ? `Fastest of ${options.rounds} rounds per scenario:\n` : ""}${resultsTable(results)}\n`);
    if (targets.size > 1) log(`Output tok/s ratios (target >= 0.97 for HTTP / node-llama-cpp at c=1):\n${ratiosTable(ratios)}\n`);
    const c4 = results.filter((r) => r.concurrency === 4);
    if (c4.length) {
      const held = c4.map((r) => `${MODE_LABELS[r.mode]} ${r.startedTogether ? "yes" : "NO"}`).join(", ");
      log(`c=4: every request produced its first token before any other finished: ${held}`);
    }
    if (options.json) {
      const report = { date: new Date().toISOString(), environment: { ...environment(), load }, options, model: modelFile, settings: entry.llama, context, results, ratios };
      writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
      log(`wrote ${options.json}`);
    }
  } finally {
    for (const target of targets.values()) await target.dispose();
  }
}

/** Loads each mode's target into `targets` (so a failure part-way still disposes the loaded ones). */
async function loadTargets(options: BenchOptions, entry: ModelEntry, targets: Map<Mode, Target>): Promise<ContextInfo | undefined> {
  let context: ContextInfo | undefined;
  for (const mode of options.modes) {
    if (mode === "llama") {
      const target = await loadLlamaTarget(entry.file!, entry.llama, GPU);
      targets.set(mode, target);
      context = target.info;
    } else if (mode === "engine") {
      targets.set(mode, await loadEngineTarget(entry.file!, entry.llama, entry.queue.maxWaiting, GPU));
    } else if (options.url) {
      targets.set(mode, httpTarget({ baseUrl: options.url, key: options.key, model: entry.id }));
    } else {
      const server = await startBenchServer(entry, GPU);
      targets.set(mode, server);
      log(`server: ${server.endpoint.baseUrl} (in-process)`);
    }
  }
  if (context) {
    log(
      `context: ${context.backend} (${context.build}), threads ${context.threads}, batch ${context.batchSize}, ` + `${context.sequences} sequences x ${context.contextSize} tokens`,
    );
    if (context.threads > context.cpuMathCores) {
      log(`WARNING: ${context.threads} threads on ${context.cpuMathCores} math cores: llama.cpp's threads wait for each other at every step; expect a large slowdown (--threads)`);
    }
  }
  return context;
}

/** Every concurrency level, each round running every target on the same fresh requests. */
async function runScenarios(targets: Map<Mode, Target>, options: BenchOptions): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  // Every measured request gets a new number, so no prompt is ever fully cached from an earlier run.
  let requestNumber = 0;
  for (const concurrency of options.concurrency) {
    const count = Math.max(concurrency, options.requests ?? Math.max(4, 2 * concurrency));
    const runs = new Map<Mode, ScenarioResult[]>();
    for (let round = 1; round <= options.rounds; round++) {
      const requests = buildRequests(count, options.maxTokens, requestNumber);
      requestNumber += count;
      for (const [mode, target] of targets) {
        const nativeBefore = target.nativeCalls?.();
        const { traces, durationMs } = await runConcurrent(target.run, requests, concurrency);
        const nativeAfter = target.nativeCalls?.();
        const outputTokens = traces.reduce((sum, t) => sum + t.completionTokens, 0);
        const result: ScenarioResult = {
          mode,
          concurrency,
          maxTokens: options.maxTokens,
          metrics: computeMetrics(traces, durationMs),
          offTargetRequests: traces.filter((t) => t.completionTokens !== options.maxTokens).length,
          startedTogether: concurrency > 1 ? allStartedBeforeAnyFinished(traces.slice(0, concurrency)) : null,
          roundTokensPerSecond: [],
          ...(nativeBefore && nativeAfter ? { native: nativeCallFigures(nativeBefore, nativeAfter, outputTokens) } : {}),
        };
        runs.set(mode, [...(runs.get(mode) ?? []), result]);
        log(summaryLine(result, options.rounds > 1 ? `round ${round}/${options.rounds}` : undefined));
      }
    }
    for (const modeRuns of runs.values()) {
      const fastest = modeRuns.reduce((best, r) => (r.metrics.outputTokensPerSecond > best.metrics.outputTokensPerSecond ? r : best));
      results.push({
        ...fastest,
        // The checks must hold in every round, not only in the fastest.
        offTargetRequests: modeRuns.reduce((sum, r) => sum + r.offTargetRequests, 0),
        startedTogether: concurrency > 1 ? modeRuns.every((r) => r.startedTogether) : null,
        roundTokensPerSecond: modeRuns.map((r) => r.metrics.outputTokensPerSecond),
      });
    }
  }
  return results;
}

function environment() {
  const packageVersion = (name: string) => (JSON.parse(readFileSync(join(PACKAGE_ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
  return { node: process.version, cpu: cpus()[0]?.model, cores: cpus().length, nodeLlamaCpp: packageVersion("node-llama-cpp"), libuvPool: describeLibuvPool() };
}

await main(parseOptions(process.argv.slice(2)));
