/**
 * `npm run bench -- --vs-llama-server`: Hearth against llama.cpp's own llama-server, built from the
 * llama.cpp source node-llama-cpp ships, on the same GGUF with the same threads and sequences
 * (slots). Both run as their own processes on loopback and are driven over HTTP/SSE by the same
 * client; every scenario runs round by round with the order of the two alternated, and the load
 * average is recorded per round, so drift on the machine hits both alike. See docs/bench.md.
 */
import { writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { contextThreads, getSharedLlama } from "../../src/engines/llama/getSharedLlama.js";
import { describeLibuvPool } from "../../src/engines/llama/threadsForBatch.js";
import { requestOnce, runOnOwnConnections } from "./http.js";
import { describeLlamaServer, deviceMismatch, ensureLlamaServer, type LlamaServerBuild } from "./llamaServerBuild.js";
import { computeMetrics, type RequestTrace, type ScenarioMetrics } from "./metrics.js";
import type { ModelFile } from "./models.js";
import { type ProcessMemory, startHearth, startLlamaServer, type RunningServer, type ServerSettings } from "./servers.js";
import { type MedianInterval, medianInterval, medianOf, VERDICT_COVERAGE, verdictOf } from "./verdict.js";
import { buildLongPromptRequests, buildRequests, type BenchRequest } from "./workload.js";

export interface VersusOptions {
  model: ModelFile;
  /** llama.cpp threads for both (0: Hearth's default, one per core). */
  threads: number;
  rounds: number;
  maxTokens: number;
  contextSize: number;
  promptTokens: number;
  flashAttention?: "on" | "off";
  /** The Hearth server's libuv pool size (UV_THREADPOOL_SIZE); unset: as `hearth serve` chooses it (bin/libuvPool.cjs). */
  uvThreads?: number;
  /** More `llama` settings for Hearth's model entry. */
  hearthLlama?: Record<string, unknown>;
  /** Run only these scenarios (default: all). */
  scenarios?: string[];
  /** This llama-server binary instead of the one built from node-llama-cpp's bundled source. */
  llamaServer?: string;
  json?: string;
  log: (line: string) => void;
}

type ScenarioName = "c1" | "c4" | "c16-s4" | "c16-s16" | "prefill";

interface Scenario {
  name: ScenarioName;
  label: string;
  sequences: number;
  /** Tokens per sequence. */
  contextSize: number;
  concurrency: number;
  requests: (offset: number) => BenchRequest[];
  /** The burst's first requests are sent this far apart, in order (runConcurrent). */
  staggerMs?: number;
  /** The figure compared (higher is better) and how it is read from a run. */
  figure: { label: string; of: (metrics: ScenarioMetrics, traces: RequestTrace[]) => number };
  goal: number;
}

/** Hearth's RSS may be at most this multiple of llama-server's. */
const MEMORY_GOAL = 1.1;
/** Hearth's idle collection starts 2 s after the last request (--idle-gc-ms) and ends 5.5 s later. */
const IDLE_READ_MS = 9_000;

/** Each server's RSS and its split into anonymous and file-backed pages (the weights are mapped from the file in both). */
interface RssPair {
  hearth: ProcessMemory | null;
  llamaServer: ProcessMemory | null;
}

const rssPair = (hearth: RunningServer, llamaServer: RunningServer): RssPair => ({ hearth: hearth.memory(), llamaServer: llamaServer.memory() });

/** "860 MiB (anon 300 + file 560)". */
function memoryText(memory: ProcessMemory | null): string {
  if (!memory) return "- MiB";
  return `${mib(memory.rssBytes)} MiB (anon ${mib(memory.anonBytes)} + file ${mib(memory.fileBytes)})`;
}

/** Both servers' RSS for one context shape, at three points: a node lightly used, the same left idle, and one at working size. */
interface MemoryReading {
  sequences: number;
  contextSize: number;
  /** The model loaded and one short request per sequence served. */
  afterWarmup: RssPair;
  /** The same, IDLE_READ_MS later with nothing sent: what a node left alone holds (Hearth's --idle-gc-ms has run). */
  idle: RssPair;
  /** After every scenario of the shape. */
  afterScenarios: RssPair;
}

/** Start to answering (spawn to first 200), then the first request's time to first token, per server. */
interface ColdStart {
  sequences: number;
  contextSize: number;
  hearth: { startMs: number; firstTtftMs: number };
  llamaServer: { startMs: number; firstTtftMs: number };
}

const rssRatio = ({ hearth, llamaServer }: RssPair) => (hearth && llamaServer ? hearth.rssBytes / llamaServer.rssBytes : Number.NaN);

interface Round {
  round: number;
  first: RunningServer["name"];
  loadBefore: number;
  hearth: RoundResult;
  llamaServer: RoundResult;
  ratio: number;
}

interface RoundResult {
  figure: number;
  metrics: ScenarioMetrics;
  /** c16 on 4 sequences: no request waited more than two turns past its place in the queue. */
  starvationFree?: boolean;
  /** The requests that did (empty when starvationFree). */
  starved?: StarvedRequest[];
  /** Each request's first token, in turns since the burst, in the order sent (for reading a starved round). */
  firstTokenTurns?: number[];
  /** Requests whose completion differs from its max_tokens (the workload assumes none). */
  offTarget: number;
  /** The server's decode calls in this round, per generated token, and sequences per call (null: not readable). */
  decode: { calls: number; callsPerToken: number; sequencesPerCall: number } | null;
}

/** Decode speed of one stream: 1000 / the median time per output token after the first. */
const decodeTokensPerSecond = (metrics: ScenarioMetrics) => 1000 / metrics.tpotMs.median;
/** Prompt processing: prompt tokens / time to first token (one output token requested), median over requests. */
const promptTokensPerSecond = (_: ScenarioMetrics, traces: RequestTrace[]) =>
  medianOf(traces.map((t) => t.promptTokens / (((t.outputTimes[0] ?? t.endedAt) - t.startedAt) / 1000)));
const aggregateTokensPerSecond = (metrics: ScenarioMetrics) => metrics.outputTokensPerSecond;

/** A request of a burst that waited past its bound: its place in the burst, and turns waited against turns allowed. */
export interface StarvedRequest {
  request: number;
  waitedTurns: number;
  allowedTurns: number;
}

/**
 * No starvation: request i of a burst (in the order sent) has its first token within
 * (floor(i / sequences) + 2) turns of being sent, a turn being the median time one request holds
 * a sequence. Returns the requests past their bound (none: no starvation), so a round that fails
 * says which.
 */
export function starvedRequests(traces: readonly RequestTrace[], sequences: number): StarvedRequest[] {
  const starved: StarvedRequest[] = [];
  firstTokenTurns(traces).forEach((waitedTurns, i) => {
    const allowedTurns = Math.floor(i / sequences) + 2;
    if (waitedTurns > allowedTurns) starved.push({ request: i, waitedTurns, allowedTurns });
  });
  return starved;
}

/** How long each request of a burst (in the order sent) waited for its first token, in turns (starvedRequests). */
export function firstTokenTurns(traces: readonly RequestTrace[]): number[] {
  const turn = medianOf(traces.map((t) => t.endedAt - (t.outputTimes[0] ?? t.endedAt)));
  return traces.map((t) => ((t.outputTimes[0] ?? Number.POSITIVE_INFINITY) - t.startedAt) / turn);
}

export async function runVersusLlamaServer(options: VersusOptions): Promise<void> {
  const { log } = options;
  const build: LlamaServerBuild = options.llamaServer ? describeLlamaServer(options.llamaServer) : ensureLlamaServer({ log });
  const threads = contextThreads(options.threads);
  log(`llama-server: ${build.server} (llama.cpp ${build.release}, ${build.commit.slice(0, 12)}, ${build.gpu})`);
  log(`model: ${options.model.path} (${(options.model.bytes / 2 ** 20).toFixed(1)} MiB); ${threads} threads for both; ${options.rounds} rounds alternated`);
  // Without --uv-threads the Hearth server inherits this process's pool size, which the bench's
  // entry (scripts/bench.cjs) chose as `hearth serve` would.
  const inherited = describeLibuvPool();
  const uvThreads = options.uvThreads ?? inherited.size;
  if (options.hearthLlama) log(`Hearth's model entry adds llama settings ${JSON.stringify(options.hearthLlama)}`);
  log(`Hearth's libuv pool: ${uvThreads} thread${uvThreads === 1 ? "" : "s"} (${options.uvThreads ? "UV_THREADPOOL_SIZE from --uv-threads" : inherited.chosenBy})`);

  const { maxTokens } = options;
  // The long prompts are cut to length with the model's own tokenizer (vocabulary only, no weights).
  const llama = await getSharedLlama(false);
  const vocabulary = await llama.loadModel({ modelPath: options.model.path, vocabOnly: true });
  const countTokens = (text: string) => vocabulary.tokenize(text).length;
  const chat = (count: number) => (offset: number) => buildRequests(count, maxTokens, offset);
  const allScenarios: Scenario[] = [
    {
      name: "c1",
      label: "1 stream, 4 sequences: decode tok/s",
      sequences: 4,
      contextSize: options.contextSize,
      concurrency: 1,
      requests: chat(3),
      figure: { label: "decode tok/s", of: decodeTokensPerSecond },
      goal: 0.97,
    },
    {
      name: "c4",
      label: "4 streams on 4 sequences: aggregate tok/s",
      sequences: 4,
      contextSize: options.contextSize,
      concurrency: 4,
      requests: chat(8),
      figure: { label: "tok/s total", of: aggregateTokensPerSecond },
      goal: 0.95,
    },
    {
      name: "c16-s4",
      label: "16 clients on 4 sequences: aggregate tok/s",
      sequences: 4,
      contextSize: options.contextSize,
      concurrency: 16,
      requests: chat(16),
      // The starvation rule holds each request to its place in the queue, so the burst must reach
      // the server in the order it is counted in: sent in the same instant, requests race (the
      // rule then blames the server for the client's order); 5 ms apart (75 ms for the burst,
      // against turns of 0.2 s on a GPU and 5 s on this CPU) they arrive in order.
      staggerMs: 5,
      figure: { label: "tok/s total", of: aggregateTokensPerSecond },
      goal: 0.95,
    },
    {
      name: "prefill",
      label: `${options.promptTokens}-token prompt: prompt tok/s`,
      sequences: 4,
      // The long prompt and its answer fit one sequence (rounded up to a whole KiB of tokens).
      contextSize: Math.max(options.contextSize, Math.ceil((options.promptTokens + 512) / 1024) * 1024),
      concurrency: 1,
      requests: (offset) => buildLongPromptRequests(2, options.promptTokens, countTokens, offset),
      figure: { label: "prompt tok/s", of: promptTokensPerSecond },
      goal: 0.95,
    },
    {
      name: "c16-s16",
      label: "16 streams on 16 sequences: aggregate tok/s",
      sequences: 16,
      contextSize: options.contextSize,
      concurrency: 16,
      requests: chat(16),
      figure: { label: "tok/s total", of: aggregateTokensPerSecond },
      goal: 0.95,
    },
  ];

  const unknown = options.scenarios?.filter((name) => !allScenarios.some((s) => s.name === name)) ?? [];
  if (unknown.length) throw new Error(`unknown scenarios ${unknown.join(", ")}; they are ${allScenarios.map((s) => s.name).join(", ")}`);
  const scenarios = options.scenarios ? allScenarios.filter((s) => options.scenarios!.includes(s.name)) : allScenarios;

  const results: { scenario: Scenario; rounds: Round[] }[] = [];
  const memory: MemoryReading[] = [];
  const coldStarts: ColdStart[] = [];
  const parity: ({ sequences: number; contextSize: number } & Parity)[] = [];
  let requestNumber = 0;
  // One pair of servers per context shape, started fresh for the scenarios that use it.
  const shapes = [...new Map(scenarios.map((s) => [`${s.sequences}x${s.contextSize}`, { sequences: s.sequences, contextSize: s.contextSize }])).values()];
  for (const { sequences, contextSize } of shapes) {
    const settings: ServerSettings = {
      modelFile: options.model.path,
      threads,
      sequences,
      contextSize,
      flashAttention: options.flashAttention,
      uvThreads: options.uvThreads,
      hearthLlama: options.hearthLlama,
    };
    const servers = await startBoth(build, settings, log);
    try {
      // What a user waits for after starting a server: until it answers, then the first request's
      // first token (Hearth loads the model on that request; llama-server loaded it before answering).
      // One server at a time, so neither's first request competes with the other's.
      const coldStart: ColdStart["hearth"][] = [];
      for (const server of servers) {
        const [request] = buildRequests(1, 4, 2_000_000 + requestNumber++);
        const { traces } = await runOnOwnConnections(server.endpoint, [request!], 1);
        const trace = traces[0]!;
        coldStart.push({ startMs: server.startedInMs, firstTtftMs: (trace.outputTimes[0] ?? trace.endedAt) - trace.startedAt });
      }
      for (const server of servers) {
        const warmup = buildRequests(sequences, 4, 1_000_000);
        await runOnOwnConnections(server.endpoint, warmup, warmup.length);
      }
      // Light use: the model loaded and a few short requests served (what an idle node holds).
      const afterWarmup = rssPair(servers[0], servers[1]);
      await new Promise((resolve) => setTimeout(resolve, IDLE_READ_MS));
      const idle = rssPair(servers[0], servers[1]);
      const sameRequest = await compareOutputs(servers);
      parity.push({ sequences, contextSize, ...sameRequest });
      log(`Same request on both (${sequences} sequences): ${parityText(sameRequest)}; Hearth's engine: ${sameRequest.hearthEngine ?? "not named"}`);
      const mismatch = deviceMismatch(sameRequest.hearthEngine, build.gpu);
      if (mismatch) log(`WARNING: ${mismatch}`);
      for (const scenario of scenarios.filter((s) => s.sequences === sequences && s.contextSize === contextSize)) {
        const rounds: Round[] = [];
        for (let round = 1; round <= options.rounds; round++) {
          const requests = scenario.requests(requestNumber);
          requestNumber += requests.length;
          const order = round % 2 === 1 ? servers : ([servers[1], servers[0]] as const);
          const loadBefore = loadavg()[0]!;
          const byName = new Map<string, RoundResult>();
          for (const server of order) byName.set(server.name, await runRound(server, scenario, requests));
          const hearth = byName.get("Hearth")!;
          const llamaServer = byName.get("llama-server")!;
          const entry: Round = { round, first: order[0].name, loadBefore, hearth, llamaServer, ratio: hearth.figure / llamaServer.figure };
          rounds.push(entry);
          log(roundLine(scenario, entry));
        }
        results.push({ scenario, rounds });
      }
      // After the runs the KV cache and buffers are at their working size (and llama-server's prompt cache has grown).
      memory.push({ sequences, contextSize, afterWarmup, idle, afterScenarios: rssPair(servers[0], servers[1]) });
      coldStarts.push({ sequences, contextSize, hearth: coldStart[0]!, llamaServer: coldStart[1]! });
      // How Hearth's engine batched its decode steps over these scenarios (one batch per step is the goal).
      const decode = await servers[0].decodeStats?.();
      if (decode) log(`Hearth decode batches (${settings.sequences} sequences): ${JSON.stringify(decode)}`);
    } finally {
      for (const server of servers) await server.stop();
    }
  }

  await vocabulary.dispose();
  log("");
  log(summaryTable(results));
  log("");
  for (const m of memory) {
    for (const [when, pair] of [
      ["after warm-up", m.afterWarmup],
      [`idle ${IDLE_READ_MS / 1000} s later`, m.idle],
      ["after the scenarios", m.afterScenarios],
    ] as const) {
      const ratio = rssRatio(pair);
      log(
        `RSS with the model loaded, ${m.sequences} sequences x ${m.contextSize} tokens, ${when}: Hearth ${memoryText(pair.hearth)}, llama-server ${memoryText(pair.llamaServer)} (${fixed(ratio, 2)}x; goal <= ${MEMORY_GOAL}: ${ratio <= MEMORY_GOAL ? "met" : "not met"})`,
      );
    }
  }
  for (const c of coldStarts) {
    const line = (name: string, t: ColdStart["hearth"]) =>
      `${name} answers ${fixed(t.startMs, 0)} ms after its start, first token of the first request ${fixed(t.firstTtftMs, 0)} ms later (${fixed(t.startMs + t.firstTtftMs, 0)} ms in all)`;
    log(`Cold start, ${c.sequences} sequences x ${c.contextSize} tokens: ${line("Hearth", c.hearth)}; ${line("llama-server", c.llamaServer)}`);
  }
  if (options.json) {
    const report = {
      date: new Date().toISOString(),
      environment: { node: process.version, cpu: cpus()[0]?.model, cores: availableParallelism() },
      llamaServer: build,
      model: options.model,
      threads,
      hearthUvThreads: uvThreads,
      hearthLlama: options.hearthLlama ?? {},
      maxTokens,
      scenarios: results.map(({ scenario, rounds }) => {
        const interval = medianInterval(rounds.map((r) => r.ratio));
        return {
          name: scenario.name,
          label: scenario.label,
          figure: scenario.figure.label,
          goal: scenario.goal,
          medianRatio: medianOf(rounds.map((r) => r.ratio)),
          medianRatioInterval: interval,
          verdict: verdictOf(interval, scenario.goal),
          rounds,
        };
      }),
      memory: memory.map((m) => ({
        ...m,
        goal: MEMORY_GOAL,
        ratioAfterWarmup: rssRatio(m.afterWarmup),
        ratioIdle: rssRatio(m.idle),
        ratioAfterScenarios: rssRatio(m.afterScenarios),
      })),
      coldStarts,
      parity,
    };
    writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    log(`wrote ${options.json}`);
  }
}

async function startBoth(build: LlamaServerBuild, settings: ServerSettings, log: (line: string) => void): Promise<readonly [RunningServer, RunningServer]> {
  const startedAt = performance.now();
  const hearth = await startHearth(settings);
  log(
    `Hearth serving ${hearth.endpoint.baseUrl} (${settings.sequences} sequences x ${settings.contextSize} tokens) after ${((performance.now() - startedAt) / 1000).toFixed(1)} s`,
  );
  try {
    const llama = await startLlamaServer(build.server, settings);
    log(`llama-server serving ${llama.endpoint.baseUrl} (${settings.sequences} slots)`);
    return [hearth, llama] as const;
  } catch (error) {
    await hearth.stop();
    throw error;
  }
}

/** One greedy request without a system message, answered whole by each server. */
interface Parity {
  promptTokens: { hearth: number; llamaServer: number };
  completionTokens: { hearth: number; llamaServer: number };
  sameText: boolean;
  /** How many leading characters the two answers share (greedy decoding from the same prompt). */
  agreeingChars: number;
  textChars: { hearth: number; llamaServer: number };
  /** Hearth's `x-service-model-router` on that answer: which engine and device served it (`llama.cpp/cuda`). */
  hearthEngine: string | null;
}

/**
 * Whether the two compare like for like: the same messages must become the same prompt (both render
 * the GGUF's template; a conversation without a system message is where renderers differ most).
 * The greedy answers are compared too, but need not agree to the end: a random-weight model's
 * logits are nearly tied, and the smallest difference in how the two set up llama.cpp's flash
 * attention flips a pick (on this model they agreed to the end with flash attention off, 2026-11-26).
 */
async function compareOutputs(servers: readonly [RunningServer, RunningServer]): Promise<Parity> {
  const answers = await Promise.all(
    servers.map(async ({ endpoint }) => {
      const response = await requestOnce(`${endpoint.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(endpoint.key ? { authorization: `Bearer ${endpoint.key}` } : {}) },
        body: JSON.stringify({ model: endpoint.model, messages: [{ role: "user", content: "Which way is north?" }], max_tokens: 24, temperature: 0, top_p: 1 }),
      });
      if (response.status !== 200) throw new Error(`parity request: HTTP ${response.status}: ${response.text}`);
      const body = JSON.parse(response.text) as { choices: { message: { content: string } }[]; usage: { prompt_tokens: number; completion_tokens: number } };
      const engine = response.headers["x-service-model-router"];
      return { text: body.choices[0]!.message.content, usage: body.usage, engine: typeof engine === "string" ? engine : null };
    }),
  );
  const [hearth, llamaServer] = answers as [(typeof answers)[number], (typeof answers)[number]];
  let agreeingChars = 0;
  while (agreeingChars < Math.min(hearth.text.length, llamaServer.text.length) && hearth.text[agreeingChars] === llamaServer.text[agreeingChars]) agreeingChars++;
  return {
    promptTokens: { hearth: hearth.usage.prompt_tokens, llamaServer: llamaServer.usage.prompt_tokens },
    completionTokens: { hearth: hearth.usage.completion_tokens, llamaServer: llamaServer.usage.completion_tokens },
    sameText: hearth.text === llamaServer.text,
    agreeingChars,
    textChars: { hearth: hearth.text.length, llamaServer: llamaServer.text.length },
    hearthEngine: hearth.engine,
  };
}

const parityText = (p: Parity) =>
  `prompt tokens ${p.promptTokens.hearth} / ${p.promptTokens.llamaServer} (Hearth / llama-server), ${p.completionTokens.hearth} / ${p.completionTokens.llamaServer} greedy tokens, ` +
  (p.sameText ? "identical text" : `texts agree for their first ${p.agreeingChars} of ${p.textChars.hearth} / ${p.textChars.llamaServer} characters`);

async function runRound(server: RunningServer, scenario: Scenario, requests: BenchRequest[]): Promise<RoundResult> {
  const before = await server.decodeCounters();
  const { traces, durationMs } = await runOnOwnConnections(server.endpoint, requests, scenario.concurrency, scenario.staggerMs);
  const after = await server.decodeCounters();
  const metrics = computeMetrics(traces, durationMs);
  const generated = traces.reduce((sum, t) => sum + t.completionTokens, 0);
  const calls = before && after ? after.decodeCalls - before.decodeCalls : 0;
  return {
    figure: scenario.figure.of(metrics, traces),
    metrics,
    ...(scenario.concurrency > scenario.sequences
      ? { ...starvation(starvedRequests(traces, scenario.sequences)), firstTokenTurns: firstTokenTurns(traces).map((turns) => Math.round(turns * 100) / 100) }
      : {}),
    offTarget: traces.filter((t, i) => t.completionTokens !== requests[i]!.maxTokens).length,
    decode: before && after && calls > 0 ? { calls, callsPerToken: calls / Math.max(generated, 1), sequencesPerCall: (after.sequenceSlots - before.sequenceSlots) / calls } : null,
  };
}

const starvation = (starved: StarvedRequest[]) => ({ starvationFree: starved.length === 0, starved });
const starvedText = (starved: StarvedRequest[]) => starved.map((s) => `request ${s.request} waited ${fixed(s.waitedTurns, 1)} turns of ${s.allowedTurns}`).join(", ");

const mib = (bytes: number | null) => (bytes === null ? "?" : (bytes / 2 ** 20).toFixed(0));
const fixed = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : "-");

function roundLine(scenario: Scenario, round: Round): string {
  const part = (name: string, r: RoundResult) =>
    `${name} ${fixed(r.figure)} (TTFT med ${fixed(r.metrics.ttftMs.median, 0)} ms, ${fixed(r.metrics.meanPromptTokens, 0)} prompt tokens${r.starvationFree === undefined ? "" : r.starvationFree ? ", no starvation" : `, STARVED: ${starvedText(r.starved ?? [])}`}${r.offTarget ? `, ${r.offTarget} off-target` : ""}${r.decode ? `, ${r.decode.calls} decodes: ${fixed(r.decode.callsPerToken, 2)} per token, ${fixed(r.decode.sequencesPerCall, 2)} sequences each` : ""})`;
  return `${scenario.name} round ${round.round} (load ${round.loadBefore.toFixed(2)}, ${round.first} first): ${part("Hearth", round.hearth)} / ${part("llama-server", round.llamaServer)} = ${round.ratio.toFixed(2)}`;
}

const intervalText = (interval: MedianInterval) => `${interval.low.toFixed(2)}–${interval.high.toFixed(2)} (${Math.round(interval.coverage * 100)}%)`;

function summaryTable(results: readonly { scenario: Scenario; rounds: Round[] }[]): string {
  const lines = [
    `| scenario | figure | Hearth (median) | llama-server (median) | ratio per round | median ratio | interval (coverage) | goal | verdict (${VERDICT_COVERAGE * 100}%) | TTFT med ms H / L | load per round |`,
    "|---|---|--:|--:|---|--:|--:|--:|---|--:|---|",
  ];
  for (const { scenario, rounds } of results) {
    const ratios = rounds.map((r) => r.ratio);
    const interval = medianInterval(ratios);
    lines.push(
      `| ${scenario.label} | ${scenario.figure.label} | ${fixed(medianOf(rounds.map((r) => r.hearth.figure)))} | ${fixed(medianOf(rounds.map((r) => r.llamaServer.figure)))} | ` +
        `${ratios.map((r) => r.toFixed(2)).join(", ")} | **${medianOf(ratios).toFixed(2)}** | ${intervalText(interval)} | ${scenario.goal} | ${verdictOf(interval, scenario.goal)} | ` +
        `${fixed(medianOf(rounds.map((r) => r.hearth.metrics.ttftMs.median)), 0)} / ${fixed(medianOf(rounds.map((r) => r.llamaServer.metrics.ttftMs.median)), 0)} | ` +
        `${rounds.map((r) => r.loadBefore.toFixed(1)).join(", ")} |`,
    );
  }
  return lines.join("\n");
}
