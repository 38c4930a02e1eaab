import type { ChatMessage, SamplingOptions } from "../../src/engines/types.js";
import type { RequestTrace } from "./metrics.js";

/** One benchmark request, identical for every target. */
export interface BenchRequest {
  messages: ChatMessage[];
  maxTokens: number;
}

/**
 * Runs one request against a target and reports its timings; calls `onSent` once the request
 * has left for the server (over HTTP: written to its socket), if the target can tell.
 */
export type RunRequest = (request: BenchRequest, onSent?: () => void) => Promise<RequestTrace>;

/**
 * Greedy decoding: the random-weight models never pick the end-of-turn token under it, so
 * every request generates exactly `maxTokens` tokens and all targets do the same work.
 * top_p 1 is sent explicitly because the server's default (0.95) is not the engine's.
 */
export const SAMPLING: SamplingOptions = { temperature: 0, topP: 1 };

const SYSTEM_PROMPT = "You are a concise assistant. Answer in plain prose.";
const USER_PROMPT = "Explain how a sourdough starter works, what the yeast and the bacteria each contribute, and how to keep one alive through a week of neglect.";

/**
 * The workload: a shared system prompt (cached across requests, as in real traffic) and a
 * user message made unique by its number, so each request evaluates its own prompt suffix.
 */
export function buildRequests(count: number, maxTokens: number, offset = 0): BenchRequest[] {
  return Array.from({ length: count }, (_, i) => ({
    messages: [
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: `Request ${offset + i}. ${USER_PROMPT}` },
    ],
    maxTokens,
  }));
}

export interface ScenarioRun {
  /** In request order; the first `concurrency` were issued together at the start (staggerMs apart, in order, when given). */
  traces: RequestTrace[];
  durationMs: number;
}

/**
 * Closed-loop load at a fixed concurrency (vLLM's --max-concurrency): `concurrency` clients
 * each issue their next request as soon as their previous one completes.
 *
 * With `staggerMs`, the first `concurrency` requests go out one after another: each once the one
 * before it has been sent, and `staggerMs` later. A burst meant to test the server's queue must
 * reach it in the order its requests are counted in, and requests sent in the same instant race
 * each other (and timers alone do not keep the order: two due in the same turn of a busy loop
 * fire together).
 */
export async function runConcurrent(run: RunRequest, requests: readonly BenchRequest[], concurrency: number, staggerMs = 0): Promise<ScenarioRun> {
  const traces: RequestTrace[] = new Array(requests.length);
  let next = 0;
  const clients = Math.min(concurrency, requests.length);
  // sent[k] settles when client k's first request is on its way (at once without a stagger).
  const sent = Array.from({ length: clients }, () => {
    let resolve!: () => void;
    const promise = new Promise<void>((settle) => (resolve = settle));
    return { promise, resolve };
  });
  const client = async (_: unknown, k: number) => {
    if (staggerMs > 0 && k > 0) {
      await sent[k - 1]!.promise;
      await waitAtLeast(staggerMs);
    }
    const { resolve: released } = sent[k]!;
    while (next < requests.length) {
      const index = next++;
      try {
        traces[index] = await run(requests[index]!, released);
      } finally {
        // A target that cannot tell when it sent, or a request that failed, releases the next client anyway.
        released();
      }
    }
    released();
  };
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: clients }, client));
  return { traces, durationMs: performance.now() - startedAt };
}

/**
 * Waits `ms` by performance.now(): a timer counts from the event loop's cached clock, which lags
 * the real one by however long the current turn has run, so it can fire a few ms early.
 */
async function waitAtLeast(ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now()) await new Promise((resolve) => setTimeout(resolve, Math.ceil(left)));
}

const FILLER =
  "A starter is flour and water left to ferment: wild yeast makes the gas that lifts the dough, and lactic bacteria make the acid that flavours it and keeps other microbes out. ";

/**
 * Prefill requests: a user message of `promptTokens` tokens as `countTokens` counts them (the
 * model's own tokenizer, so the chat template adds a few more), numbered at its start so no
 * request shares more than the template's opening with an earlier one, and one output token.
 */
export function buildLongPromptRequests(count: number, promptTokens: number, countTokens: (text: string) => number, offset = 0): BenchRequest[] {
  return Array.from({ length: count }, (_, i) => {
    let text = `Document ${offset + i}. `;
    for (let paragraph = 1; countTokens(text) < promptTokens; paragraph++) text += `Paragraph ${paragraph}. ${FILLER}`;
    // Trim back to the length: drop characters from the end until the count fits.
    let low = 0;
    let high = text.length;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (countTokens(text.slice(0, mid)) <= promptTokens) low = mid;
      else high = mid - 1;
    }
    return { messages: [{ role: "user", content: text.slice(0, low) }], maxTokens: 1 };
  });
}
