import { mkdtempSync, rmSync } from "node:fs";
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
import { SAMPLING, type BenchRequest } from "./workload.js";

export interface HttpEndpoint {
  /** The API base, e.g. http://127.0.0.1:8080/api/v1 (llama-server: http://127.0.0.1:8081/v1). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <key>` when set. */
  key?: string;
  model: string;
}

/**
 * fetch, again when the pooled keep-alive connection it picked was closed by the server before
 * any response (undici: "other side closed"). A server closes an idle connection on its own clock
 * (cpp-httplib, llama-server's HTTP library, after 5 idle seconds, and after a number of requests
 * per connection) and the client can pick it in that instant (a full run failed so once,
 * 2026-11-26, and a 200-request run at four streams twice in a row, 2026-11-27: the second
 * connection picked was as stale as the first); the request was not answered, so sending it again
 * runs it once.
 */
async function fetchRetryingStaleConnection(url: string, init: RequestInit): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, init);
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause;
      if (cause?.code !== "UND_ERR_SOCKET" || attempt >= STALE_CONNECTION_ATTEMPTS) throw error;
    }
  }
}

/** Every connection of a client at 16 streams can be stale at once; a socket error past that is real. */
const STALE_CONNECTION_ATTEMPTS = 20;

export function httpTarget(endpoint: HttpEndpoint): Target {
  const url = `${endpoint.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (endpoint.key) headers.authorization = `Bearer ${endpoint.key}`;

  const run = async (request: BenchRequest): Promise<RequestTrace> => {
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
    const response = await fetchRetryingStaleConnection(url, { method: "POST", headers, body });
    if (!response.ok || !response.body) throw new Error(`POST ${url}: HTTP ${response.status}: ${await response.text()}`);

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

    const decoder = new TextDecoder();
    let buffered = "";
    for await (const bytes of response.body) {
      buffered += decoder.decode(bytes, { stream: true });
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline).replace(/\r$/, "");
        buffered = buffered.slice(newline + 1);
        if (line.startsWith("data:")) onEvent(line.slice(5).trimStart());
      }
    }
    const endedAt = performance.now();
    if (!done) throw new Error(`POST ${url}: the stream ended without data: [DONE]`);
    if (!usage) throw new Error(`POST ${url}: no usage chunk although stream_options.include_usage was set`);
    return { startedAt, outputTimes, endedAt, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, finishReason };
  };
  return { run, dispose: async () => {} };
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
  return {
    ...httpTarget(endpoint),
    endpoint,
    dispose: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
