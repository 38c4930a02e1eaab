import type { Distribution, ScenarioMetrics } from "./metrics.js";
import type { NativeCalls } from "./inProcess.js";
import { MODE_LABELS, type Mode } from "./options.js";

export interface ScenarioResult {
  mode: Mode;
  concurrency: number;
  maxTokens: number;
  metrics: ScenarioMetrics;
  /** Requests that did not generate exactly maxTokens tokens (the workload assumes none). */
  offTargetRequests: number;
  /** For concurrency > 1: the first `concurrency` requests all produced output before any of them finished. */
  startedTogether: boolean | null;
  /** Output tok/s of every round of this scenario (the reported metrics are the fastest round's). */
  roundTokensPerSecond: number[];
  /** node-llama-cpp alone: its native calls in this run, per output token, and the milliseconds each one was awaited. */
  native?: NativeCallFigures;
}

export interface NativeCallFigures {
  decodeBatchPerToken: number;
  decodeBatchMsEach: number;
  sampleTokenPerToken: number;
  sampleTokenMsEach: number;
}

/** The native calls between two snapshots, per output token. */
export function nativeCallFigures(before: NativeCalls, after: NativeCalls, outputTokens: number): NativeCallFigures {
  const each = (name: keyof NativeCalls) => {
    const calls = after[name].calls - before[name].calls;
    return { perToken: calls / Math.max(outputTokens, 1), msEach: calls > 0 ? (after[name].ms - before[name].ms) / calls : 0 };
  };
  const decode = each("decodeBatch");
  const sample = each("sampleToken");
  return { decodeBatchPerToken: decode.perToken, decodeBatchMsEach: decode.msEach, sampleTokenPerToken: sample.perToken, sampleTokenMsEach: sample.msEach };
}

/** Aggregate output tok/s of one mode divided by another's, at one concurrency. */
export interface Ratio {
  concurrency: number;
  httpOverLlama?: number;
  engineOverLlama?: number;
  httpOverEngine?: number;
}

export function computeRatios(results: readonly ScenarioResult[]): Ratio[] {
  const levels = [...new Set(results.map((r) => r.concurrency))];
  return levels.map((concurrency) => {
    const rate = (mode: Mode) => results.find((r) => r.mode === mode && r.concurrency === concurrency)?.metrics.outputTokensPerSecond;
    const over = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? a / b : undefined);
    const [llama, engine, http] = [rate("llama"), rate("engine"), rate("http")];
    return { concurrency, httpOverLlama: over(http, llama), engineOverLlama: over(engine, llama), httpOverEngine: over(http, engine) };
  });
}

const ms = (value: number) => (Number.isNaN(value) ? "-" : value < 10 ? value.toFixed(2) : value.toFixed(1));
const triple = (d: Distribution) => `${ms(d.mean)} / ${ms(d.median)} / ${ms(d.p99)}`;
const rate = (value: number) => value.toFixed(1);
const ratio = (value: number | undefined) => (value === undefined ? "-" : value.toFixed(3));
const yesNo = (value: boolean | null) => (value === null ? "n/a" : value ? "yes" : "NO");

/** Left-aligned first column, right-aligned numbers, two spaces between columns. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export function resultsTable(results: readonly ScenarioResult[]): string {
  return formatTable(
    ["target", "c", "req", "tok/req", "TTFT ms mean/med/p99", "TPOT ms mean/med/p99", "ITL ms mean/med/p99", "E2EL ms mean/med/p99", "tok/s stream", "tok/s total"],
    results.map((r) => [
      MODE_LABELS[r.mode],
      String(r.concurrency),
      String(r.metrics.requests),
      r.metrics.meanCompletionTokens.toFixed(r.offTargetRequests ? 1 : 0),
      triple(r.metrics.ttftMs),
      triple(r.metrics.tpotMs),
      triple(r.metrics.itlMs),
      triple(r.metrics.e2elMs),
      rate(r.metrics.streamTokensPerSecond),
      rate(r.metrics.outputTokensPerSecond),
    ]),
  );
}

export function ratiosTable(ratios: readonly Ratio[]): string {
  return formatTable(
    ["c", "HTTP / node-llama-cpp", "LlamaChatEngine / node-llama-cpp", "HTTP / LlamaChatEngine"],
    ratios.map((r) => [String(r.concurrency), ratio(r.httpOverLlama), ratio(r.engineOverLlama), ratio(r.httpOverEngine)]),
  );
}

/** One line per scenario run, printed as soon as it finishes. */
export function summaryLine(r: ScenarioResult, round?: string): string {
  const m = r.metrics;
  const parts = [
    `${round ? `[${round}] ` : ""}${MODE_LABELS[r.mode]} c=${r.concurrency}: ${m.requests} req x ${m.meanCompletionTokens.toFixed(0)} tok`,
    `${rate(m.outputTokensPerSecond)} tok/s total, ${rate(m.streamTokensPerSecond)} tok/s per stream`,
    `TTFT median ${ms(m.ttftMs.median)} ms, ITL median ${ms(m.itlMs.median)} ms (p99 ${ms(m.itlMs.p99)}), E2EL median ${ms(m.e2elMs.median)} ms`,
  ];
  if (r.startedTogether !== null) parts.push(`all ${r.concurrency} started before any finished: ${yesNo(r.startedTogether)}`);
  if (r.native) {
    const n = r.native;
    parts.push(
      `native: decodeBatch ${n.decodeBatchPerToken.toFixed(2)} per token, ${ms(n.decodeBatchMsEach)} ms each; sampleToken ${n.sampleTokenPerToken.toFixed(2)} per token, ${ms(n.sampleTokenMsEach)} ms each`,
    );
  }
  if (r.offTargetRequests) parts.push(`WARNING: ${r.offTargetRequests} request(s) did not generate exactly ${r.maxTokens} tokens`);
  return parts.join("; ");
}
