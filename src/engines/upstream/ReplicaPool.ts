import type { UpstreamHealthCheck } from "../../config/backendSettings.js";
import { displayBaseUrl, type ResolvedReplica } from "../../config/upstreamReplicas.js";
import { ModelAtCapacityError } from "../../errors.js";
import { rendezvousOrder } from "./rendezvousHash.js";

/** One replica's state as GET /admin/models, the console and the metrics show it. */
export interface ReplicaStatus {
  /** The base URL without credentials: also the replica's name in metrics. */
  baseUrl: string;
  weight: number;
  maxInFlight: number | null;
  healthy: boolean;
  /** Epoch ms until which an ejected replica is left alone; it is re-admitted when a check succeeds after it. */
  ejectedUntil: number | null;
  inFlight: number;
  requests: number;
  errors: number;
  /** How long its last answer took to start (response headers), in ms. */
  lastLatencyMs: number | null;
  lastError: string | null;
}

/** A replica and what the pool counts about it. */
export class Replica {
  readonly id: string;
  readonly host: string;
  inFlight = 0;
  requests = 0;
  errors = 0;
  lastLatencyMs: number | null = null;
  lastError: string | null = null;
  healthy = true;
  ejectedUntil: number | null = null;
  /** Ejections in a row without a success between them: the back-off doubles with each. */
  failuresInRow = 0;
  /** Latencies (seconds) not yet read by the metrics. */
  latencies: number[] = [];

  constructor(readonly settings: ResolvedReplica) {
    this.id = displayBaseUrl(settings.baseUrl);
    this.host = new URL(settings.baseUrl).host;
  }

  get weight(): number {
    return this.settings.weight;
  }

  get full(): boolean {
    return this.settings.maxInFlight !== undefined && this.inFlight >= this.settings.maxInFlight;
  }

  status(): ReplicaStatus {
    return {
      baseUrl: this.id,
      weight: this.weight,
      maxInFlight: this.settings.maxInFlight ?? null,
      healthy: this.healthy,
      ejectedUntil: this.ejectedUntil,
      inFlight: this.inFlight,
      requests: this.requests,
      errors: this.errors,
      lastLatencyMs: this.lastLatencyMs,
      lastError: this.lastError,
    };
  }
}

/** How one request's use of a replica ended. */
export type ReplicaOutcome =
  | { ok: true }
  /** `eject`: the replica itself failed (refused, timed out, 5xx, cut off) rather than the request. */
  | { ok: false; error: string; eject: boolean };

/** The most latencies kept per replica between two scrapes (older ones are dropped). */
const MAX_PENDING_LATENCIES = 10_000;

export interface ReplicaPoolOptions {
  modelId: string;
  healthCheck: UpstreamHealthCheck;
  now?: () => number;
  /** Runs one active check of a replica (GET {baseUrl}/models); resolves true when it answered well. */
  check?: (replica: Replica, timeoutMs: number) => Promise<boolean>;
}

/**
 * The replicas of one upstream model and the choice between them. Requests with an affinity key
 * (prompt_cache_key, or a long shared system prompt) go to the replica rendezvous hashing gives
 * the key, so its KV cache is reused; the rest go to the replica with the fewest requests in
 * flight for its weight. Ejected replicas and replicas at maxInFlight are skipped (the next in
 * the same order takes the request). With two or more replicas, a failing replica is ejected
 * with an exponential back-off and re-admitted when a health check succeeds after it; a pool of
 * one is never ejected (there is nowhere else to go, and its own error says more than a 503).
 */
export class ReplicaPool {
  readonly replicas: readonly Replica[];
  private readonly now: () => number;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly checking = new Set<Replica>();
  private readonly recheck = new Set<Replica>();
  private interval: NodeJS.Timeout | undefined;
  private disposed = false;

  constructor(
    settings: readonly ResolvedReplica[],
    private readonly options: ReplicaPoolOptions,
  ) {
    if (settings.length === 0) throw new Error("an upstream pool needs at least one replica");
    this.replicas = settings.map((replica) => new Replica(replica));
    this.now = options.now ?? Date.now;
  }

  get ejects(): boolean {
    return this.replicas.length > 1;
  }

  /** Starts the periodic health checks (pools of two or more; the timers do not keep the process alive). */
  startHealthChecks(): this {
    if (!this.ejects || this.interval || !this.options.check) return this;
    this.interval = setInterval(() => {
      for (const replica of this.replicas) if (replica.healthy) void this.runCheck(replica);
    }, this.options.healthCheck.intervalMs);
    this.interval.unref();
    return this;
  }

  /**
   * The replica for a request, skipping those in `tried`: by the key's rendezvous order when it
   * has an affinity key, else the least loaded for its weight. Throws the busy model's 503 when
   * every replica is ejected or full.
   */
  choose(affinityKey: string | undefined, tried: ReadonlySet<Replica> = new Set()): Replica {
    const replica = this.pick(affinityKey, tried);
    if (!replica) throw new ModelAtCapacityError(this.options.modelId);
    return replica;
  }

  /** As `choose`, undefined when no replica can take the request. */
  pick(affinityKey: string | undefined, tried: ReadonlySet<Replica> = new Set()): Replica | undefined {
    const usable = (replica: Replica) => replica.healthy && !replica.full && !tried.has(replica);
    if (affinityKey !== undefined) return rendezvousOrder(affinityKey, this.replicas).find(usable);
    let best: Replica | undefined;
    for (const replica of this.replicas) {
      if (!usable(replica)) continue;
      if (!best || leastLoadedFirst(replica, best) < 0) best = replica;
    }
    return best;
  }

  /** Counts a request on `replica` until the returned function says how it ended. */
  begin(replica: Replica): { answered(): void; end(outcome: ReplicaOutcome): void } {
    replica.inFlight++;
    replica.requests++;
    const sentAt = performance.now();
    let ended = false;
    return {
      // The replica answered (its response started): the latency the pool reports.
      answered: () => {
        const ms = performance.now() - sentAt;
        replica.lastLatencyMs = Math.round(ms * 10) / 10;
        if (replica.latencies.length < MAX_PENDING_LATENCIES) replica.latencies.push(ms / 1000);
      },
      end: (outcome) => {
        if (ended) return;
        ended = true;
        replica.inFlight--;
        if (outcome.ok) return;
        replica.errors++;
        replica.lastError = outcome.error;
        if (outcome.eject) this.eject(replica);
      },
    };
  }

  /** Takes a replica out of the pool until a check after its back-off succeeds. */
  eject(replica: Replica): void {
    if (!this.ejects || this.disposed || !replica.healthy) return;
    this.backOff(replica);
  }

  private backOff(replica: Replica): void {
    replica.healthy = false;
    replica.failuresInRow++;
    const { ejectMs, maxEjectMs } = this.options.healthCheck;
    const backOff = Math.min(maxEjectMs, ejectMs * 2 ** (replica.failuresInRow - 1));
    replica.ejectedUntil = this.now() + backOff;
    this.after(backOff, () => void this.runCheck(replica));
  }

  /** Back in the pool: a check succeeded after the back-off. */
  private admit(replica: Replica): void {
    replica.healthy = true;
    replica.ejectedUntil = null;
    replica.failuresInRow = 0;
  }

  private async runCheck(replica: Replica): Promise<void> {
    if (this.disposed || !this.options.check) return;
    // One check of a replica at a time (an interval shorter than the timeout must not pile them
    // up); a reason to check that comes meanwhile runs a fresh check when this one ends.
    if (this.checking.has(replica)) {
      this.recheck.add(replica);
      return;
    }
    this.checking.add(replica);
    const before = { healthy: replica.healthy, failuresInRow: replica.failuresInRow };
    const ok = await this.options.check(replica, this.options.healthCheck.timeoutMs).catch(() => false);
    this.checking.delete(replica);
    if (this.disposed) return;
    if (this.recheck.delete(replica)) return this.runCheck(replica);
    // Ejected (again) while the check ran: the check after that back-off decides, not this one.
    if (replica.healthy !== before.healthy || replica.failuresInRow !== before.failuresInRow) return;
    if (ok) {
      if (!replica.healthy) this.admit(replica);
      return;
    }
    if (replica.healthy) {
      replica.lastError = "health check failed";
      this.eject(replica);
      return;
    }
    // Still failing after its back-off: out again, for twice as long.
    this.backOff(replica);
  }

  private after(ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  status(): ReplicaStatus[] {
    return this.replicas.map((replica) => replica.status());
  }

  /** Each replica's latencies (seconds) since the last call, for the metrics' histogram. */
  takeLatencies(): { replica: string; seconds: number[] }[] {
    return this.replicas.map((replica) => {
      const seconds = replica.latencies;
      replica.latencies = [];
      return { replica: replica.id, seconds };
    });
  }

  dispose(): void {
    this.disposed = true;
    clearInterval(this.interval);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

/** Fewer requests in flight for the weight first; on a tie, fewer requests so far for the weight (a weighted round robin when idle). */
function leastLoadedFirst(a: Replica, b: Replica): number {
  return a.inFlight / a.weight - b.inFlight / b.weight || a.requests / a.weight - b.requests / b.weight;
}
