import { microsToUnits } from "../billing/money.js";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Credits } from "../billing/credits.js";
import type { ChatGenerateResult } from "../engines/types.js";
import type { Limits } from "../limits/Limits.js";
import type { ModelManager } from "../models/ModelManager.js";
import { sampleModels, type ModelSample } from "./sampleModels.js";
import { type ActivityFields, type Stall, StallWatch } from "./StallWatch.js";

/** Seconds; from a few ms (tiny models, cached prompts) to the 120 s request timeout. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Seconds between two pieces of one stream: decoding is milliseconds per token. */
const INTER_TOKEN_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1];
/** Seconds the event loop was held past the stall threshold: from a fraction of a second to a frozen node. */
const STALL_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const TOKENS_PER_SECOND_BUCKETS = [1, 2.5, 5, 10, 20, 35, 50, 75, 100, 150, 250, 500, 1000, 2500];

/** Label of requests that matched no route (kept as one series, whatever the URL). */
export const UNMATCHED_ROUTE = "unmatched";

/**
 * Prometheus metrics of one server (its own registry: several servers share a test process).
 * Routes and services report through the small methods below; queue and model gauges are read
 * from the model manager at scrape time; credits and rate-limit rejections come from listeners.
 */
export class Metrics {
  readonly registry = new Registry();
  private models: ModelManager | undefined;

  private readonly requests = new Counter({
    name: "hearth_http_requests_total",
    help: "HTTP requests by method, Express route pattern and status (499: the client went away)",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
  });
  private readonly requestDuration = new Histogram({
    name: "hearth_http_request_duration_seconds",
    help: "HTTP request duration, from arrival to the last byte (streams included)",
    labelNames: ["method", "route", "status"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly timeToFirstToken = new Histogram({
    name: "hearth_chat_time_to_first_token_seconds",
    help: "Chat: from handing the request to the engine (queue wait and prompt evaluation included) to the first generated piece",
    labelNames: ["model"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly interTokenLatency = new Histogram({
    name: "hearth_chat_inter_token_latency_seconds",
    help: "Chat: time between consecutive generated pieces of one choice (streaming and non-streaming)",
    labelNames: ["model"] as const,
    buckets: INTER_TOKEN_BUCKETS,
    registers: [this.registry],
  });
  private readonly tokensPerSecond = new Histogram({
    name: "hearth_chat_tokens_per_second",
    help: "Chat: completion tokens of a request divided by its generation time (from generation start to the end)",
    labelNames: ["model"] as const,
    buckets: TOKENS_PER_SECOND_BUCKETS,
    registers: [this.registry],
  });
  private readonly completionTokens = new Counter({
    name: "hearth_chat_completion_tokens_total",
    help: "Chat: tokens generated (every choice, reasoning included)",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  private readonly promptTokens = new Counter({
    name: "hearth_chat_prompt_tokens_total",
    help: "Chat: prompt tokens (cached ones included)",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: "hearth_chat_queue_wait_seconds",
    help: "Chat: from handing the request to the engine to generation start (prompt rendering, credit reservation, waiting for a free sequence)",
    labelNames: ["model"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly queueDepth = new Gauge({
    name: "hearth_model_queue_depth",
    help: "Requests waiting for a free slot (sequence or worker) of a loaded model",
    labelNames: ["model", "kind"] as const,
    registers: [this.registry],
  });
  private readonly busySlots = new Gauge({
    name: "hearth_model_busy_slots",
    help: "Slots (sequences or workers) of a loaded model serving a request now",
    labelNames: ["model", "kind"] as const,
    registers: [this.registry],
  });
  private readonly loadedModels = new Gauge({
    name: "hearth_models_loaded",
    help: "Models loaded in memory, by kind",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });
  private readonly modelMemory = new Gauge({
    name: "hearth_model_memory_bytes",
    help: "Estimated memory of a loaded model, by memory type (ram or vram): node-llama-cpp's estimate for GGUF, file sizes for ONNX",
    labelNames: ["model", "memory"] as const,
    registers: [this.registry],
  });
  private readonly creditsCharged = new Counter({
    name: "hearth_credits_charged_total",
    help: "Credits charged for requests and jobs, in whole units of the currency (USD, BUNDLED_CREDITS, DIEM)",
    labelNames: ["currency"] as const,
    registers: [this.registry],
  });
  private readonly creditsRefunded = new Counter({
    name: "hearth_credits_refunded_total",
    help: "Credits refunded (failed jobs), in whole units of the currency",
    labelNames: ["currency"] as const,
    registers: [this.registry],
  });
  private readonly rateLimited = new Counter({
    name: "hearth_rate_limit_rejections_total",
    help: "Calls refused by a limit: RPM or TPM (429 from the model tiers and the RPC proxy), FAILED_REQUESTS (a caller blocked by the abuse guard)",
    labelNames: ["limit_type"] as const,
    registers: [this.registry],
  });

  // Upstream pools, per replica (`replica`: its base URL without credentials). Read from the
  // pool at scrape time: the counters restart when the model is reloaded, as counters may.
  private readonly upstreamRequests = new Counter({
    name: "hearth_upstream_requests_total",
    help: "Upstream pools: requests sent to each replica since the model loaded (a retry counts on both replicas)",
    labelNames: ["model", "replica"] as const,
    registers: [this.registry],
  });
  private readonly upstreamErrors = new Counter({
    name: "hearth_upstream_errors_total",
    help: "Upstream pools: requests a replica failed (refused, timed out, 5xx or at capacity, a stream cut off)",
    labelNames: ["model", "replica"] as const,
    registers: [this.registry],
  });
  private readonly upstreamInFlight = new Gauge({
    name: "hearth_upstream_in_flight",
    help: "Upstream pools: requests this node has on each replica now",
    labelNames: ["model", "replica"] as const,
    registers: [this.registry],
  });
  private readonly upstreamHealthy = new Gauge({
    name: "hearth_upstream_healthy",
    help: "Upstream pools: 1 when the replica is in the pool, 0 while it is ejected",
    labelNames: ["model", "replica"] as const,
    registers: [this.registry],
  });
  private readonly upstreamLatency = new Histogram({
    name: "hearth_upstream_latency_seconds",
    help: "Upstream pools: from sending a request to a replica to its answer starting (response headers)",
    labelNames: ["model", "replica"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  private readonly stalls = new Histogram({
    name: "hearth_event_loop_stall_seconds",
    help: "Times the event loop was held past --stall-warn-ms, by how long (every request and stream waited that long; the log names what was in flight)",
    buckets: STALL_BUCKETS,
    registers: [this.registry],
  });
  private stallWatch: StallWatch | undefined;

  private readonly idleCollections = new Histogram({
    name: "hearth_idle_gc_seconds",
    help: "Full garbage collections run once no request was in flight for --idle-gc-ms, by how long they held the event loop",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5],
    registers: [this.registry],
  });

  constructor() {
    // Process metrics (CPU, memory, event loop, GC) under their usual names, for stock dashboards.
    collectDefaultMetrics({ register: this.registry });
  }

  /** Connects the sources that report by themselves (money, refusals) or are read at scrape time (models). */
  observe(sources: { credits: Credits; limits: Limits; models: ModelManager }): this {
    this.models = sources.models;
    sources.credits.onMovement((movement) => {
      const counter = movement.kind === "charge" ? this.creditsCharged : this.creditsRefunded;
      counter.inc({ currency: movement.currency }, microsToUnits(movement.micros));
    });
    sources.limits.onRejection(({ limitType }) => this.rateLimited.inc({ limit_type: limitType }));
    return this;
  }

  /** Starts noticing when the event loop is held this long or longer: each time is counted, then reported. */
  watchStalls(thresholdMs: number, report: (stall: Stall) => void): void {
    this.stallWatch?.stop();
    this.stallWatch = new StallWatch({
      thresholdMs,
      onStall: (stall) => {
        this.stalls.observe(stall.heldMs / 1000);
        report(stall);
      },
    }).start();
  }

  /** One idle collection ran, holding the event loop this many seconds. */
  idleCollected(seconds: number): void {
    this.idleCollections.observe(seconds);
  }

  stopWatchingStalls(): void {
    this.stallWatch?.stop();
    this.stallWatch = undefined;
  }

  /**
   * Something that may hold the event loop (a request, a model load) has started: a stall
   * reported before the returned function is called names it, with the fields `describe` gives.
   */
  beginActivity(kind: string, describe: () => ActivityFields): () => void {
    return this.stallWatch?.begin(kind, describe) ?? noop;
  }

  request(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.requestDuration.observe(labels, seconds);
  }

  /** Times one chat generation; call its methods from the engine callbacks. */
  chatTimer(model: string): ChatTimer {
    // Observed once per generated piece: the labelled series is looked up once per generation.
    const interTokenLatency = this.interTokenLatency.labels({ model });
    return new ChatTimer(model, {
      queueWait: (s) => this.queueWait.observe({ model }, s),
      firstToken: (s) => this.timeToFirstToken.observe({ model }, s),
      interToken: (s) => interTokenLatency.observe(s),
      finished: (result, generationSeconds) => {
        this.promptTokens.inc({ model }, result.promptTokens);
        this.completionTokens.inc({ model }, result.completionTokens);
        if (result.completionTokens > 0 && generationSeconds > 0) this.tokensPerSecond.observe({ model }, result.completionTokens / generationSeconds);
      },
    });
  }

  readonly contentType = this.registry.contentType;

  /** The exposition text; model gauges are sampled now. */
  async render(): Promise<string> {
    if (this.models) this.setModelGauges(sampleModels(this.models));
    return this.registry.metrics();
  }

  private setModelGauges(samples: readonly ModelSample[]): void {
    // Reset first: an unloaded model's series disappear instead of keeping their last value.
    for (const gauge of [this.queueDepth, this.busySlots, this.loadedModels, this.modelMemory]) gauge.reset();
    const perKind = new Map<string, number>();
    for (const sample of samples) {
      perKind.set(sample.kind, (perKind.get(sample.kind) ?? 0) + 1);
      if (sample.waiting !== undefined) this.queueDepth.set({ model: sample.id, kind: sample.kind }, sample.waiting);
      if (sample.busy !== undefined) this.busySlots.set({ model: sample.id, kind: sample.kind }, sample.busy);
      if (sample.memory) {
        this.modelMemory.set({ model: sample.id, memory: "ram" }, sample.memory.ramBytes);
        this.modelMemory.set({ model: sample.id, memory: "vram" }, sample.memory.vramBytes);
      }
    }
    for (const [kind, count] of perKind) this.loadedModels.set({ kind }, count);
    this.setUpstreamMetrics(samples);
  }

  private setUpstreamMetrics(samples: readonly ModelSample[]): void {
    for (const metric of [this.upstreamRequests, this.upstreamErrors, this.upstreamInFlight, this.upstreamHealthy]) metric.reset();
    for (const sample of samples) {
      for (const replica of sample.replicas ?? []) {
        const labels = { model: sample.id, replica: replica.baseUrl };
        this.upstreamRequests.inc(labels, replica.requests);
        this.upstreamErrors.inc(labels, replica.errors);
        this.upstreamInFlight.set(labels, replica.inFlight);
        this.upstreamHealthy.set(labels, replica.healthy ? 1 : 0);
        for (const seconds of replica.latencies) this.upstreamLatency.observe(labels, seconds);
      }
    }
  }
}

const noop = () => {};

interface ChatTimerSinks {
  queueWait(seconds: number): void;
  firstToken(seconds: number): void;
  interToken(seconds: number): void;
  finished(result: ChatGenerateResult, generationSeconds: number): void;
}

/**
 * One chat generation's clock, started when the service hands the request to the engine.
 * Pieces are what the engine emits (a token, or several when a multi-byte character or a
 * held-back stop string completes); inter-token latency is measured per choice.
 */
export class ChatTimer {
  private readonly handedAt = performance.now();
  private startedAt: number | undefined;
  private firstAt: number | undefined;
  private readonly lastPieceAt = new Map<number, number>();

  constructor(
    readonly model: string,
    private readonly sinks: ChatTimerSinks,
  ) {}

  /** The engine's onStart: sequences assigned, generation begins. */
  started(): void {
    this.startedAt = performance.now();
    this.sinks.queueWait((this.startedAt - this.handedAt) / 1000);
  }

  /** The engine's onDelta. */
  piece(choice: number): void {
    const now = performance.now();
    if (this.firstAt === undefined) {
      this.firstAt = now;
      this.sinks.firstToken((now - this.handedAt) / 1000);
    }
    const last = this.lastPieceAt.get(choice);
    if (last !== undefined) this.sinks.interToken((now - last) / 1000);
    this.lastPieceAt.set(choice, now);
  }

  /** The engine's result (aborted generations included: their tokens were produced). */
  finished(result: ChatGenerateResult): void {
    const end = performance.now();
    this.sinks.finished(result, (end - (this.startedAt ?? this.handedAt)) / 1000);
  }
}
