/**
 * Latency and throughput metrics under vLLM's names and definitions
 * (benchmarks/benchmark_serving.py), computed from per-request timing traces.
 */

/** What one request did, on the `performance.now()` clock (milliseconds). */
export interface RequestTrace {
  /** When the request was issued. */
  startedAt: number;
  /**
   * When each piece of output arrived: one per token in-process, one per SSE chunk with
   * non-empty `delta.content` over HTTP (a chunk can carry more than one token when the
   * server holds text back, e.g. an incomplete UTF-8 sequence or a stop-string prefix).
   */
  outputTimes: number[];
  /** When the last byte of the response arrived (`data: [DONE]` over HTTP). */
  endedAt: number;
  promptTokens: number;
  /** Generated tokens as the server or engine counted them (`usage.completion_tokens` over HTTP). */
  completionTokens: number;
  finishReason: string;
}

export interface Distribution {
  mean: number;
  median: number;
  p99: number;
}

export interface ScenarioMetrics {
  requests: number;
  durationMs: number;
  meanPromptTokens: number;
  meanCompletionTokens: number;
  /** Output pieces per request: tokens in-process, content chunks over HTTP. */
  meanOutputChunks: number;
  /** Time to first token: request issued -> first non-empty output. */
  ttftMs: Distribution;
  /** Time per output token after the first: (E2EL - TTFT) / (completion tokens - 1), per request. */
  tpotMs: Distribution;
  /** Inter-token latency: every gap between consecutive outputs, pooled over all requests. */
  itlMs: Distribution;
  /** End-to-end latency: request issued -> response complete. */
  e2elMs: Distribution;
  /** Mean over requests of completion tokens / E2EL: the speed one client sees. */
  streamTokensPerSecond: number;
  /** Total completion tokens / scenario wall time (vLLM's "Output token throughput"). */
  outputTokensPerSecond: number;
  requestsPerSecond: number;
}

/** Percentile with linear interpolation between closest ranks (numpy's default, as vLLM uses). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.length ? sorted.reduce((sum, v) => sum + v, 0) / sorted.length : Number.NaN;
  return { mean, median: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

export function computeMetrics(traces: readonly RequestTrace[], durationMs: number): ScenarioMetrics {
  const ttft: number[] = [];
  const tpot: number[] = [];
  const itl: number[] = [];
  const e2el: number[] = [];
  const streamRates: number[] = [];
  for (const trace of traces) {
    const latency = trace.endedAt - trace.startedAt;
    e2el.push(latency);
    streamRates.push(trace.completionTokens / (latency / 1000));
    const first = trace.outputTimes[0];
    if (first === undefined) continue;
    ttft.push(first - trace.startedAt);
    if (trace.completionTokens > 1) tpot.push((latency - (first - trace.startedAt)) / (trace.completionTokens - 1));
    for (let i = 1; i < trace.outputTimes.length; i++) itl.push(trace.outputTimes[i]! - trace.outputTimes[i - 1]!);
  }
  const totalTokens = traces.reduce((sum, t) => sum + t.completionTokens, 0);
  return {
    requests: traces.length,
    durationMs,
    meanPromptTokens: mean(traces.map((t) => t.promptTokens)),
    meanCompletionTokens: totalTokens / traces.length,
    meanOutputChunks: mean(traces.map((t) => t.outputTimes.length)),
    ttftMs: distribution(ttft),
    tpotMs: distribution(tpot),
    itlMs: distribution(itl),
    e2elMs: distribution(e2el),
    streamTokensPerSecond: mean(streamRates),
    outputTokensPerSecond: totalTokens / (durationMs / 1000),
    requestsPerSecond: traces.length / (durationMs / 1000),
  };
}

/**
 * The fairness property for a batch of requests issued together: every one of them has
 * produced its first output before any of them finished (nobody waited for a whole other
 * request). With more concurrent requests than sequences it cannot hold, by design.
 */
export function allStartedBeforeAnyFinished(batch: readonly RequestTrace[]): boolean {
  const lastFirstOutput = Math.max(...batch.map((t) => t.outputTimes[0] ?? Number.POSITIVE_INFINITY));
  const firstEnd = Math.min(...batch.map((t) => t.endedAt));
  return lastFirstOutput < firstEnd;
}
