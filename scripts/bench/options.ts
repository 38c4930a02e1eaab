import { Command, InvalidArgumentError, Option } from "commander";
import { resolve } from "node:path";
import { GENERATED_MODELS, type GeneratedModelName } from "./models.js";
import { ROUNDS_FOR_VERDICT } from "./verdict.js";

/** The three ways the same workload is run; their ratios separate HTTP cost from engine cost. */
export const MODES = ["llama", "engine", "http"] as const;
export type Mode = (typeof MODES)[number];

export const MODE_LABELS: Record<Mode, string> = { llama: "node-llama-cpp", engine: "LlamaChatEngine", http: "HTTP (SSE)" };

export interface BenchOptions {
  url?: string;
  key?: string;
  model?: string;
  modelFile?: string;
  generate: GeneratedModelName;
  modes: Mode[];
  concurrency: number[];
  /** Requests per concurrency level; default max(4, 2 x concurrency). */
  requests?: number;
  /** Each scenario runs this many times, alternating targets; the fastest run is reported. */
  rounds: number;
  maxTokens: number;
  threads?: number;
  batchSize?: number;
  sequences?: number;
  contextSize: number;
  json?: string;
  /** Hearth against llama.cpp's llama-server built from the same source, side by side. */
  vsLlamaServer: boolean;
  /** Prompt length of the prefill scenario (--vs-llama-server). */
  promptTokens: number;
  /** --vs-llama-server: flash attention for both servers (default: each one's own, "auto"). */
  flashAttention?: "on" | "off";
  /** --vs-llama-server: this llama-server binary instead of the one built from node-llama-cpp's bundled source. */
  llamaServer?: string;
  /** --vs-llama-server scenarios to run (default: all). */
  scenarios?: string[];
  /** --vs-llama-server: the Hearth server's libuv pool size (UV_THREADPOOL_SIZE; unset: what `hearth serve` chooses, bin/libuvPool.cjs). */
  uvThreads?: number;
  /** --vs-llama-server: more `llama` settings for Hearth's model entry (an A/B of one setting against the same llama-server). */
  hearthLlama?: Record<string, unknown>;
  /** Time to first token of an image question on the tiny vision demo model (its own scenario). */
  vision: boolean;
  /** --vs-llama-server JSON reports to pool into one table (nothing is run). */
  pool?: string[];
}

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a positive integer");
  return n;
};
const nonNegativeInt = (value: string) => (value === "0" ? 0 : positiveInt(value));
const jsonObject = (value: string): Record<string, unknown> => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError("expected a JSON object");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError("expected a JSON object");
  return parsed as Record<string, unknown>;
};
const intList = (value: string) => value.split(",").map((part) => positiveInt(part.trim()));
const modeList = (value: string): Mode[] =>
  value.split(",").map((part) => {
    const mode = part.trim() as Mode;
    if (!MODES.includes(mode)) throw new InvalidArgumentError(`modes are ${MODES.join(", ")}`);
    return mode;
  });

export function parseOptions(argv: readonly string[]): BenchOptions {
  const program = new Command("npm run bench --")
    .description(
      "Streaming chat load generator with vLLM's metrics (TTFT, TPOT, ITL, E2EL, output tok/s). Runs the same workload " +
        "in-process on node-llama-cpp, through Hearth's LlamaChatEngine, and over HTTP against a Hearth server " +
        "(its own, in-process, unless --url is given).",
    )
    .option("--url <url>", "bench an external server's API base (e.g. http://127.0.0.1:8080/api/v1) instead of starting one")
    .option("--key <key>", "API key for --url (sent as Authorization: Bearer)")
    .option("--model <id>", "model id to request (required with --url)")
    .option("--model-file <path>", "GGUF to load (in-process modes, and the started server's model)")
    .addOption(
      new Option("--generate <name>", "generate (once, cached in data/bench-models) and bench a random-weight model").choices(Object.keys(GENERATED_MODELS)).default("tiny"),
    )
    .option("--modes <list>", `which of ${MODES.join(",")} to run (default: all; only http with --url and no --model-file)`, modeList)
    .option("--concurrency <list>", "concurrency levels", intList, [1, 4, 16])
    .option("--requests <n>", "requests per concurrency level (default max(4, 2 x concurrency); at least the concurrency)", positiveInt)
    .option("--rounds <n>", "run each scenario n times, alternating targets, and report the fastest (interference only slows runs down)", positiveInt, 1)
    .option("--max-tokens <n>", "tokens generated per request (greedy decoding, so exactly this many)", positiveInt, 128)
    .option("--threads <n>", "llama.cpp threads (0: one per core; default 1 for the tiny model, else 0)", nonNegativeInt)
    .option("--batch-size <n>", "llama.cpp batch size (default: node-llama-cpp's)", positiveInt)
    .option("--sequences <n>", "parallel sequences of the context (default: Hearth's default)", positiveInt)
    .option("--context-size <n>", "tokens per sequence", positiveInt, 2048)
    .option("--json <file>", "also write the results as JSON")
    .option(
      "--vs-llama-server",
      "compare Hearth with llama.cpp's llama-server (built once from node-llama-cpp's bundled llama.cpp source into ~/.cache/hearth/llama.cpp), " +
        "both as servers on the same GGUF with the same threads and sequences: 1 stream, 4 on 4 sequences, 16 on 4 and on 16, a long prompt; " +
        `defaults: --generate qwen-0.5b-q8 --rounds ${ROUNDS_FOR_VERDICT} (the fewest for a verdict at 90%) --max-tokens 64`,
      false,
    )
    .option("--prompt-tokens <n>", "prompt length of the --vs-llama-server prefill scenario", positiveInt, 2000)
    .addOption(new Option("--flash-attention <mode>", "--vs-llama-server: flash attention on or off for both (default: each server's own, auto)").choices(["on", "off"]))
    .option(
      "--uv-threads <n>",
      "--vs-llama-server: start the Hearth server with UV_THREADPOOL_SIZE=n (default: as `hearth serve` chooses, one thread on a Linux machine without a GPU device, so that every llama.cpp decode starts from the same thread; else the environment's, else libuv's 4)",
      positiveInt,
    )
    .option(
      "--hearth-llama <json>",
      `--vs-llama-server: more \`llama\` settings for Hearth's model entry, as a JSON object (docs/models.md), e.g. '{"overlapOutput":false}'`,
      jsonObject,
    )
    .option(
      "--llama-server <path>",
      "--vs-llama-server: compare with this llama-server binary (your own build: other flags, or CUDA kernels for your toolkit) instead of building one from node-llama-cpp's bundled source",
    )
    .option("--scenarios <list>", "--vs-llama-server scenarios to run: c1, c4, c16-s4, prefill, c16-s16 (default: all)", (value: string) => value.split(",").map((v) => v.trim()))
    .option(
      "--vision",
      "time to first token of a streamed question about one 512×512 picture on the tiny vision demo model (hearth-tiny-vision), over HTTP, " +
        "one request at a time; --requests sets how many (default 8), --max-tokens the answer's length (default 8)",
      false,
    )
    .option(
      "--pool <reports...>",
      "runs nothing: pools the per-round ratios of these --vs-llama-server --json reports (same code and machine) into one median, interval and verdict per scenario",
    )
    .showHelpAfterError()
    .parse(argv, { from: "user" });

  const flags = program.opts<Omit<BenchOptions, "modes"> & { modes?: Mode[] }>();
  if (flags.vsLlamaServer) {
    if (flags.url) program.error("--vs-llama-server starts both servers itself; it takes no --url");
    const given = (name: string) => program.getOptionValueSource(name) === "cli";
    if (!given("generate")) flags.generate = "qwen-0.5b-q8";
    if (!given("rounds")) flags.rounds = ROUNDS_FOR_VERDICT;
    if (!given("maxTokens")) flags.maxTokens = 64;
  }
  if (flags.url && !flags.model) program.error("--model is required with --url");
  const hasLocalModel = !flags.url || flags.modelFile !== undefined || program.getOptionValueSource("generate") === "cli";
  const modes = flags.modes ?? (hasLocalModel ? [...MODES] : ["http"]);
  if (!hasLocalModel && modes.some((mode) => mode !== "http")) {
    program.error("in-process modes with --url need the same model locally: pass --model-file or --generate");
  }
  if (flags.llamaServer && !flags.vsLlamaServer) program.error("--llama-server goes with --vs-llama-server");
  if (flags.hearthLlama && !flags.vsLlamaServer) program.error("--hearth-llama goes with --vs-llama-server");
  return {
    ...flags,
    modes,
    modelFile: flags.modelFile && resolve(flags.modelFile),
    json: flags.json && resolve(flags.json),
    llamaServer: flags.llamaServer && resolve(flags.llamaServer),
    pool: flags.pool?.map((file) => resolve(file)),
  };
}
