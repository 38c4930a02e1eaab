import { randomUUID } from "node:crypto";
// Imported with the server, not when the first GGUF model loads (the llama backend loads its
// engines lazily): node-llama-cpp adds a SIGTERM/SIGINT listener (signal-exit) on import, and
// it must be in place before `hearth serve` adds its own once-listeners. Added after them, it
// finds itself the only listener and re-raises the signal, cutting the graceful shutdown short.
import "node-llama-cpp";
import { join } from "node:path";
import type { z } from "zod";
import type { Express } from "express";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createApp, API_BASE_PATH } from "./app.js";
import { AUDIO_JOB } from "./api/audio/AudioJobService.js";
import { audioJobHandler } from "./api/audio/audioJob.js";
import { SpeechService } from "./api/audio/SpeechService.js";
import { VIDEO_JOB } from "./api/video/service.js";
import { videoJobHandler } from "./api/video/videoJob.js";
import type { ModelsConfig } from "./config/modelRegistry.js";
import { loadModelsConfig } from "./models/loadModelsConfig.js";
import type { ServerConfig } from "./config/serverSettings.js";
import { Credits } from "./billing/credits.js";
import { CharacterCatalog } from "./characters/CharacterCatalog.js";
import { CharacterDefinition, charactersPathFor, fromDefinition, loadCharactersFile } from "./characters/charactersFile.js";
import { LiveHub } from "./console/LiveHub.js";
import { RequestLog } from "./console/RequestLog.js";
import { ensureDemoModels } from "./fixtures/demoModels.js";
import { JobQueue } from "./jobs/JobQueue.js";
import { Limits } from "./limits/Limits.js";
import { RateLimiter } from "./limits/RateLimiter.js";
import { createLogger, type Logger } from "./logger.js";
import { Metrics } from "./metrics/Metrics.js";
import { startMetricsServer } from "./metrics/metricsServer.js";
import { stallLogFields } from "./metrics/StallWatch.js";
import { ModelManager } from "./models/ModelManager.js";
import { cachedModelFileFeatures, storeModelFileFeatures } from "./store/modelFileFeatures.js";
import { cachedModelMemoryFigure, storeModelMemoryFigure } from "./store/modelMemoryFigures.js";
import { databasePath, openStore, type Db } from "./store/Store.js";
import { createWalletServices, type WalletServices } from "./x402/WalletServices.js";
import { keepOnnxRuntimeOffline } from "./engines/onnx/onnxRuntimeOffline.js";
import { startFfmpegSpawner } from "./media/ffmpegProcess.js";
import { IdleHeapCollector } from "./garbageCollection.js";
import { InFlightRequests } from "./http/inFlightRequests.js";

export interface RunningServer {
  url: string;
  /** The Express app (tests walk its routes). */
  app: Express;
  credits: Credits;
  baseUrl: string;
  db: Db;
  models: ModelManager;
  jobs: JobQueue;
  logger: Logger;
  server: Server;
  wallet: WalletServices;
  metrics: Metrics;
  /** The unauthenticated metrics listener (`--metrics-port`), when configured: http://host:port/metrics. */
  metricsUrl?: string;
  /** Settles when the backends are prepared (after the listener is up); the stall watch starts then. */
  prepared: Promise<void>;
  /** Stops accepting, lets in-flight requests finish (up to the grace period), disposes models, closes the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Overrides reading models.config.json (tests build their own registry). */
  modelsConfig?: ModelsConfig;
  /** Overrides reading characters.json next to the registry. */
  characters?: z.input<typeof CharacterDefinition>[];
  logger?: Logger;
  gpu?: "auto" | false;
  /** Clock for billing epochs, rate-limit windows and abuse blocks (tests inject one). */
  now?: () => number;
  /** Start-up progress (the CLI draws a bar): demo models generated so far, of those missing. */
  onDemoModelProgress?: (done: number, total: number, path: string) => void;
}

export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<RunningServer> {
  keepOnnxRuntimeOffline();
  const logger = options.logger ?? createLogger(config.logLevel);
  const modelsConfig = options.modelsConfig ?? loadModelsConfig(config.configPath, config.dataDir);
  // Started now, while this process is small: ffmpeg started from a process holding models costs
  // the event loop time that grows with its memory (processSpawner.ts).
  const ffmpegSpawner = registryRunsFfmpeg(modelsConfig) ? startFfmpegSpawner() : undefined;
  const generated = await ensureDemoModels(modelsConfig, options.onDemoModelProgress);
  for (const path of generated) logger.info({ path }, "generated demo model");

  const textModels = new Set(modelsConfig.models.filter((m) => m.type === "text").map((m) => m.id));
  const fileCharacters = options.characters
    ? options.characters.map((c) => fromDefinition(CharacterDefinition.parse(c), Date.now()))
    : loadCharactersFile(charactersPathFor(config.configPath), textModels);

  const db = openStore(databasePath(config.dataDir));
  const now = options.now ?? Date.now;
  const bootId = randomUUID();
  const credits = new Credits(db, { resetHourUtc: config.diemResetHourUtc, now, bootId });
  const released = credits.releaseOrphanedHolds();
  if (released > 0) logger.warn({ released }, "released credit holds left by a process that stopped mid-request");
  const limits = new Limits(db, new RateLimiter(now), now);
  const models = new ModelManager(modelsConfig, {
    gpu: options.gpu ?? "auto",
    keepAliveSeconds: config.keepAlive,
    ramBudgetBytes: config.ramBudget,
    vramBudgetBytes: config.vramBudget,
    retryAfterFailureMs: config.modelRetryMs,
    loadWaitMs: config.modelLoadWaitMs,
    onError: (err, model) => logger.warn({ err, model }, "unloading a model failed"),
    fileFeatureCache: {
      get: (stamp) => cachedModelFileFeatures(db, stamp),
      put: (stamp, features) => storeModelFileFeatures(db, stamp, features, now()),
    },
    memoryFigures: {
      get: (stamp, key) => cachedModelMemoryFigure(db, stamp, key),
      put: (stamp, key, figure) => storeModelMemoryFigure(db, stamp, key, figure, now()),
    },
  });
  models.onChange(({ ids, reason }) => {
    if (reason !== "acquired" && reason !== "released") logger.info({ models: ids, reason }, `model ${reason}`);
    if (reason === "loaded") logExecutionProvider(logger, models, ids);
  });
  for (const { id, reason } of models.skipped) logger.info({ model: id, reason }, "model not served");
  const wallet = createWalletServices({ db, config, credits, logger, now });
  await wallet.topUps.loadSettlers();
  // Jobs are charged when queued and refunded if they fail, so no hold outlives a request:
  // releasing orphaned holds above never touches a job, and recovery only requeues or fails rows.
  const jobs = new JobQueue(db, credits, {
    workers: config.videoWorkers,
    maxAttempts: config.jobMaxAttempts,
    retentionMs: config.videoRetentionMs,
    bootId,
    // Job timestamps are wall-clock (run times, retention); the injectable clock is billing's.
    now: Date.now,
    logger,
  })
    .register(VIDEO_JOB, videoJobHandler(models, join(config.dataDir, "media", "videos")))
    .register(AUDIO_JOB, audioJobHandler(models, new SpeechService(models, db, now, config.requestTimeoutMs), join(config.dataDir, "media", "audio")));
  jobs.recover();
  const characters = new CharacterCatalog(db, fileCharacters);
  const requestLog = new RequestLog();
  const metrics = new Metrics().observe({ credits, limits, models });
  const app = createApp({ config, db, models, characters, logger, startedAt: Date.now(), credits, limits, jobs, now, wallet, requestLog, metrics });
  const live = new LiveHub({ db, models, requestLog, logger });
  // Requests grow V8's heap (its young generation alone to 32 MB, 128 on Node 24), and V8 gives it back when it
  // judges the process idle, sometimes not for minutes: once no request has been in flight for
  // --idle-gc-ms, the idle collector does it (src/garbageCollection.ts).
  const idleHeap = new IdleHeapCollector({
    report: ({ heapBytesBefore, heapBytesAfter, fullMs }) => {
      metrics.idleCollected(fullMs / 1000);
      logger.debug({ heapMiB: [heapBytesBefore, heapBytesAfter].map((bytes) => Math.round(bytes / 2 ** 20)), ms: Math.round(fullMs * 10) / 10 }, "idle garbage collection");
    },
    beginHold: () => metrics.beginActivity("idle garbage collection", () => ({})),
  });
  const inFlight = new InFlightRequests({ afterMs: config.idleGcMs, run: () => idleHeap.start(), interrupt: () => idleHeap.stop() });

  const server = await new Promise<Server>((resolve, reject) => {
    const s = createServer((req, res) => {
      inFlight.track(res);
      app(req, res);
    });
    // Idle keep-alive connections stay open longer than clients keep them (undici 4 s, most HTTP
    // clients under a minute): the client always closes first. With Node's 5 s default a client
    // could send its next request on a socket the server was closing that instant (ECONNRESET).
    s.keepAliveTimeout = 65_000;
    s.headersTimeout = 66_000;
    s.once("error", reject);
    s.listen(config.port, config.host, () => resolve(s));
  });
  live.attach(server);
  const { port } = server.address() as AddressInfo;
  wallet.origins.setListenAddress(config.host, port);
  wallet.topUps.start();
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  const metricsServer = config.metricsPort === undefined ? undefined : await startMetricsServer(metrics, config.host, config.metricsPort);
  jobs.start();
  void ffmpegSpawner?.then((state) => {
    if (!state.started) logger.warn({ reason: state.reason }, "ffmpeg starts from the node's own process (the process spawner did not start)");
  });
  // In the background: a first request finds llama.cpp's binding loaded (a request that comes
  // sooner waits for the same promise).
  const preparing = models.prepareBackends().then((notices) => {
    for (const { message, fields } of notices) logger.warn(fields ?? {}, message);
    // The watch starts now: preparing imported modules, which holds the loop by design while no request waits.
    if (config.stallWarnMs > 0 && !closing) {
      metrics.watchStalls(config.stallWarnMs, (stall) => logger.warn(stallLogFields(stall), `the event loop was held ${stall.heldMs} ms`));
      watchModelLoads(models, metrics);
    }
  });

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      inFlight.stop();
      idleHeap.stop();
      // Running jobs go back to the queue (they start again on the next start).
      const stopJobs = jobs.stop();
      // Upgraded sockets are outside the HTTP server's idle tracking: close them first.
      await live.close();
      await new Promise<void>((resolve) => {
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        // Once no request is in flight every remaining connection is idle (or half-closed by
        // its client): close them all. Past the grace period, cut what still streams.
        const cut = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
        inFlight.onIdle(() => server.closeAllConnections());
      });
      await stopJobs;
      await metricsServer?.close();
      await wallet.topUps.stop();
      await preparing;
      await models.dispose();
      metrics.stopWatchingStalls();
      db.close();
    })());
  return { url, app, baseUrl: `${url}${API_BASE_PATH}`, db, models, jobs, logger, server, credits, wallet, metrics, metricsUrl: metricsServer?.url, prepared: preparing, close };
}

/** A model load is an activity a stall report names, from its "loading" change to its "loaded", "failed" or "unloaded" (no room). */
function watchModelLoads(models: ModelManager, metrics: Metrics): void {
  const loading = new Map<string, () => void>();
  models.onChange(({ ids, reason }) => {
    const key = ids.join(",");
    if (reason === "loading") {
      loading.get(key)?.();
      loading.set(
        key,
        metrics.beginActivity("model load", () => ({ models: key })),
      );
    } else if (reason === "loaded" || reason === "failed" || reason === "unloaded") {
      loading.get(key)?.();
      loading.delete(key);
    }
  });
}

/**
 * One line per ONNX model load saying where onnxruntime runs it and why, so a GPU workstation
 * serving speech or images from the CPU says so (a warning when it runs elsewhere than asked).
 * Models sharing one loaded pipeline get one line.
 */
function logExecutionProvider(logger: Logger, models: ModelManager, ids: string[]): void {
  const placement = models.statusOf(ids[0]!).executionProvider;
  if (!placement) return;
  const fields = { models: ids, executionProvider: placement.name, providers: placement.providers, reason: placement.reason };
  const message = `onnxruntime runs ${ids.join(" + ")} on ${placement.name}: ${placement.reason}`;
  if (placement.fellBack) logger.warn(fields, message);
  else logger.info(fields, message);
}

/**
 * Whether a registry's models run ffmpeg: speech (its compressed formats), transcription (and
 * chat's audio parts, which an asr model transcribes), video, music and video parts in chat.
 * A node of chat and embedding models alone never does, and starts no process spawner for it.
 */
function registryRunsFfmpeg(config: ModelsConfig): boolean {
  return config.models.some((model) => ["tts", "asr", "video", "music"].includes(model.type) || (model.vision?.videoFrames ?? 0) > 0);
}
