import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelEntry } from "../../src/config/modelRegistry.js";
import { ServerConfig } from "../../src/config/serverSettings.js";
import type { LimitOverrides } from "../../src/limits/tiers.js";
import { createLogger } from "../../src/logger.js";
import { startServer } from "../../src/server.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { grantCredits, toMicros } from "../../src/store/ledger.js";
import type { Target } from "./inProcess.js";
import type { RequestTrace } from "./metrics.js";
import { runConcurrent, SAMPLING, type BenchRequest, type ScenarioRun } from "./workload.js";

export interface HttpEndpoint {
  /** The API base, e.g. http://127.0.0.1:8080/api/v1 (llama-server: http://127.0.0.1:8081/v1). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <key>` when set. */
  key?: string;
  model: string;
}

/**
 * POSTs a JSON body over node:http with the target's own keep-alive agent and resolves with the
 * response once its headers are in.
 *
 * The bench does not use fetch here: fetch's one process-wide connection pool kept connections
 * idle between rounds, where a server closes them on its own clock (Node after 5 idle seconds,
 * llama-server's cpp-httplib after 5 s), and a request that picked a closed one was sent again,
 * later than the others: a burst reached the server out of the order it was sent in (request 12
 * ahead of request 1, 2026-11-27). Each target, and each round of `--vs-llama-server`, has its own
 * agent, closed when it is done, so a burst goes out on fresh connections.
 *
 * Within a round a connection is reused at once, and llama-server still closes some after a
 * streamed answer without saying so (no `Connection: close`): the next request written to it gets
 * no answer ("socket hang up"). Such a request, on a reused connection and unanswered, is sent
 * again on another, as Node's documentation advises; it never reached the model, so it runs once.
 */
async function post(url: URL, headers: Record<string, string>, body: string, agent: Agent, onSent?: () => void): Promise<IncomingMessage> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send(url, { method: "POST", headers, body, agent }, onSent);
    } catch (error) {
      if (!(error instanceof ClosedBeforeAnswer) || attempt >= CLOSED_CONNECTION_ATTEMPTS) throw error;
    }
  }
}

/** Every connection an agent holds at 16 streams could have been closed at once; past that, a failure is real. */
const CLOSED_CONNECTION_ATTEMPTS = 20;

class ClosedBeforeAnswer extends Error {}

interface SendInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** false: a connection of its own, closed after the request. */
  agent: Agent | false;
}

/** Sends one request and resolves with the response once its headers are in; `onSent` once the whole request is on the socket. */
function send(url: URL | string, init: SendInit, onSent?: () => void): Promise<IncomingMessage> {
  const method = init.method ?? "GET";
  const headers = { ...init.headers, ...(init.body !== undefined ? { "content-length": String(Buffer.byteLength(init.body)) } : {}) };
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, agent: init.agent }, resolve);
    request.on("error", (error: NodeJS.ErrnoException) => {
      const closed = request.reusedSocket && (error.code === "ECONNRESET" || error.message === "socket hang up");
      const message = `${method} ${url}: ${error.message}${closed ? " on a reused connection" : ""}`;
      reject(closed ? new ClosedBeforeAnswer(message, { cause: error }) : new Error(message, { cause: error }));
    });
    if (onSent) request.on("finish", onSent);
    request.end(init.body);
  });
}

/**
 * One request on a connection of its own, closed after it: for the bench's calls between rounds
 * (decode counters, the parity request, start-up polls), which a pooled connection left idle
 * through a round could fail (the server having closed it meanwhile).
 */
export async function requestOnce(url: string, init: Omit<SendInit, "agent"> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  const response = await send(url, { ...init, agent: false });
  return { status: response.statusCode ?? 0, headers: response.headers, text: await readAll(response) };
}

const readAll = async (response: IncomingMessage) => {
  let text = "";
  for await (const chunk of response) text += chunk;
  return text;
};

/** Runs requests as runConcurrent does on connections of their own, closed when they are done. */
export async function runOnOwnConnections(endpoint: HttpEndpoint, requests: readonly BenchRequest[], concurrency: number, staggerMs = 0): Promise<ScenarioRun> {
  const target = httpTarget(endpoint);
  try {
    return await runConcurrent(target.run, requests, concurrency, staggerMs);
  } finally {
    await target.dispose();
  }
}

export function httpTarget(endpoint: HttpEndpoint): Target {
  const url = new URL(`${endpoint.baseUrl.replace(/\/+$/, "")}/chat/completions`);
  if (url.protocol !== "http:") throw new Error(`the bench speaks plain HTTP to the server it measures, not ${url.protocol} (${url.href})`);
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (endpoint.key) headers.authorization = `Bearer ${endpoint.key}`;
  // No cap on connections: a closed-loop client at concurrency c holds c of them.
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

  const run = async (request: BenchRequest, onSent?: () => void): Promise<RequestTrace> => {
    const body = JSON.stringify({
      model: endpoint.model,
      messages: request.messages,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: request.maxTokens,
      temperature: SAMPLING.temperature,
      top_p: SAMPLING.topP,
    });
    const startedAt = performance.now();
    const response = await post(url, headers, body, agent, onSent);
    if (response.statusCode !== 200) throw new Error(`POST ${url.href}: HTTP ${response.statusCode}: ${await readAll(response)}`);

    const outputTimes: number[] = [];
    let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
    let finishReason = "none";
    let done = false;
    const onEvent = (data: string) => {
      if (data === "[DONE]") {
        done = true;
        return;
      }
      const event = JSON.parse(data) as StreamEvent;
      if (event.error) throw new Error(`stream error: ${JSON.stringify(event.error)}`);
      const choice = event.choices?.[0];
      // The role chunk carries empty content and is sent before generation starts: not a token.
      if (choice?.delta?.content || choice?.delta?.reasoning_content) outputTimes.push(performance.now());
      if (choice?.finish_reason) finishReason = choice.finish_reason;
      if (event.usage) usage = event.usage;
    };

    response.setEncoding("utf8");
    let buffered = "";
    for await (const text of response) {
      buffered += text;
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline).replace(/\r$/, "");
        buffered = buffered.slice(newline + 1);
        if (line.startsWith("data:")) onEvent(line.slice(5).trimStart());
      }
    }
    const endedAt = performance.now();
    if (!done) throw new Error(`POST ${url.href}: the stream ended without data: [DONE]`);
    if (!usage) throw new Error(`POST ${url.href}: no usage chunk although stream_options.include_usage was set`);
    return { startedAt, outputTimes, endedAt, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, finishReason };
  };
  return { run, dispose: async () => agent.destroy() };
}

interface StreamEvent {
  choices?: { delta?: { content?: string | null; reasoning_content?: string | null }; finish_reason?: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  error?: unknown;
}

/**
 * A Hearth server in this process on a free port, with a temporary data directory and a
 * fresh inference key: what `npm run bench` measures when no --url is given.
 */
export async function startBenchServer(entry: ModelEntry, gpu: "auto" | false): Promise<Target & { endpoint: HttpEndpoint }> {
  const dataDir = mkdtempSync(join(tmpdir(), "hearth-bench-"));
  const config = ServerConfig.parse({ host: "127.0.0.1", port: 0, dataDir, configPath: join(dataDir, "unused.json"), logLevel: "warn" });
  const server = await startServer(config, { modelsConfig: { models: [entry] }, gpu, logger: createLogger("warn") });
  const account = createAccount(server.db, "bench");
  // Credit in case the node meters requests; the bench is never meant to run out.
  grantCredits(server.db, account.id, "USD", toMicros(1_000_000), "bench");
  // No rate limit: a load generator exceeds any per-minute table by design.
  const unlimited: LimitOverrides = { "*": { rpm: Number.MAX_SAFE_INTEGER, tpm: Number.MAX_SAFE_INTEGER } };
  const { secret } = createApiKey(server.db, {
    accountId: account.id,
    description: "bench",
    keyType: "INFERENCE",
    rateLimitOverrides: JSON.stringify(unlimited),
  });
  const endpoint: HttpEndpoint = { baseUrl: server.baseUrl, key: secret, model: entry.id };
  const target = httpTarget(endpoint);
  return {
    ...target,
    endpoint,
    dispose: async () => {
      await target.dispose();
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
