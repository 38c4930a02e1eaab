import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { inject } from "vitest";
import type { z } from "zod";
import type { CharacterDefinition } from "../../src/characters/charactersFile.js";
import { ModelEntry, type ModelsConfig } from "../../src/config/modelRegistry.js";
import { ServerConfig } from "../../src/config/serverSettings.js";
import { createLogger, type Logger } from "../../src/logger.js";
import type { EngineKind, EnginesByKind } from "../../src/engines/types.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { createAccount } from "../../src/store/accounts.js";
import { createApiKey } from "../../src/store/apiKeys.js";
import { grantCredits, toMicros } from "../../src/store/ledger.js";

export const fixturesDir = () => inject("fixturesDir");
export const tinyChatPath = () => join(fixturesDir(), "tiny-chat.gguf");
export const tinyReasoningPath = () => join(fixturesDir(), "tiny-reasoning.gguf");

/** A registry entry for the tiny chat model, with overrides. */
export function tinyChatEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  return ModelEntry.parse({
    id: "tiny-chat",
    name: "Tiny Chat",
    type: "text",
    backend: "llama",
    file: tinyChatPath(),
    llama: { contextSize: 2048, sequences: 4, threads: 1, gpuLayers: 0 },
    ...overrides,
  });
}

/** The tiny Kokoro demo model (voices af_heart, af_bella, am_adam, bf_emma, bm_george) with voice cloning. */
export function tinyKokoroEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  return ModelEntry.parse({
    id: "tts-kokoro",
    name: "Tiny Kokoro",
    type: "tts",
    backend: "kokoro",
    file: join(fixturesDir(), "tiny-kokoro"),
    onnx: { threads: 1 },
    voiceCloning: { encoder: join(fixturesDir(), "tiny-speaker-encoder") },
    ...overrides,
  });
}

export function tinyVitsEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  return ModelEntry.parse({ id: "tts-vits", type: "tts", backend: "vits", file: join(fixturesDir(), "tiny-vits"), onnx: { threads: 1 }, ...overrides });
}

export function tinyWhisperEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  return ModelEntry.parse({ id: "tiny-whisper", type: "asr", backend: "whisper", file: join(fixturesDir(), "tiny-whisper"), onnx: { threads: 1 }, ...overrides });
}

/** The tiny vision-language model (Idefics3/SmolVLM layout): pictures, and video as four frames. */
export function tinyVisionEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  return ModelEntry.parse({
    id: "tiny-vision",
    type: "text",
    backend: "transformers",
    file: join(fixturesDir(), "tiny-vlm"),
    onnx: { threads: 1 },
    vision: { maxImages: 3, videoFrames: 4, maxVideos: 1 },
    ...overrides,
  });
}

/** A registry entry for the tiny reasoning model (Qwen3-style <think> template), with overrides. */
export function tinyReasoningEntry(overrides: Partial<Record<string, unknown>> = {}): ModelEntry {
  return tinyChatEntry({ id: "tiny-reasoning", name: "Tiny Reasoning", file: tinyReasoningPath(), ...overrides });
}

export interface TestServer extends RunningServer {
  dataDir: string;
  adminKey: string;
  /**
   * An inference key on a fresh account holding `usd` of credit; `admin`: an account admin key
   * (manages its own account only); `operator`: the node operator's admin key.
   */
  createKey(options?: { usd?: number; admin?: boolean; operator?: boolean }): { key: string; accountId: string; keyId: string };
  openai(key?: string): OpenAI;
  /**
   * Runs `fn` with the server's clock stopped where it is. Rate limits count in clock-aligned
   * minutes, so two requests on a running clock may fall in two windows (a test expecting the
   * second to be refused then fails about once in twenty runs); with the clock stopped they
   * share one.
   */
  withClockStopped<T>(fn: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

/**
 * A real server on an ephemeral port with its own SQLite file, on CPU (`gpu: "auto"` lets it
 * look for a GPU, as `hearth serve` does). Pass `dataDir` to start a second server on the data
 * of a first one (a restart); that directory is then the caller's to remove.
 */
export async function startTestServer(
  options: {
    models?: ModelEntry[];
    config?: Partial<ServerConfig>;
    now?: () => number;
    dataDir?: string;
    characters?: z.input<typeof CharacterDefinition>[];
    logger?: Logger;
    gpu?: "auto" | false;
  } = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "hearth-test-"));
  const config = ServerConfig.parse({
    host: "127.0.0.1",
    port: 0,
    dataDir,
    configPath: join(dataDir, "unused.json"),
    logLevel: "silent",
    ...options.config,
  });
  const modelsConfig: ModelsConfig = { models: options.models ?? [tinyChatEntry()] };
  const clock = options.now ?? Date.now;
  let stoppedAt: number | undefined;
  const running = await startServer(config, {
    modelsConfig,
    characters: options.characters ?? [],
    gpu: options.gpu ?? false,
    now: () => stoppedAt ?? clock(),
    logger: options.logger ?? createLogger(process.env.HEARTH_TEST_LOG ?? "silent"),
  });
  const createKey = (opts: { usd?: number; admin?: boolean; operator?: boolean } = {}) => {
    const account = createAccount(running.db, "test account");
    if (opts.usd) grantCredits(running.db, account.id, "USD", toMicros(opts.usd), "test grant");
    const admin = opts.admin === true || opts.operator === true;
    const { secret, record } = createApiKey(running.db, { accountId: account.id, description: "test", keyType: admin ? "ADMIN" : "INFERENCE", operator: opts.operator === true });
    return { key: secret, accountId: account.id, keyId: record.id };
  };
  const server: TestServer = {
    ...running,
    dataDir,
    // The node operator's key: every admin endpoint, granting credit included.
    adminKey: createKey({ operator: true, usd: 100 }).key,
    createKey,
    // The current admin key by default (a test may swap in a fresh one).
    openai: (key) => new OpenAI({ apiKey: key ?? server.adminKey, baseURL: running.baseUrl, maxRetries: 0 }),
    withClockStopped: async (fn) => {
      stoppedAt = clock();
      try {
        return await fn();
      } finally {
        stoppedAt = undefined;
      }
    },
    stop: async () => {
      await running.close();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}

/** Raw fetch against the API with the admin key and a JSON body. */
export async function post(server: TestServer, path: string, body: unknown, init: { key?: string | null; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { "content-type": "application/json", ...init.headers };
  const key = init.key === undefined ? server.adminKey : init.key;
  if (key) headers.authorization = `Bearer ${key}`;
  return fetch(`${server.baseUrl}${path}`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
}

/**
 * A model's engine, loaded through the same lease a request takes (and released at once), for
 * tests that watch or slow down what an engine does inside a request.
 */
export async function engineOf<K extends EngineKind>(server: TestServer, id: string, kind: K): Promise<EnginesByKind[K]> {
  const lease = await server.models.acquire(id, kind);
  lease.release();
  return lease.engine;
}
