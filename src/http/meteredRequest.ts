import type { Response } from "express";
import type { AppDeps } from "../appDeps.js";
import { balanceHeaders } from "../billing/balanceHeaders.js";
import { RequestMeter } from "../billing/RequestMeter.js";
import type { ModelEntry } from "../config/modelRegistry.js";
import { toErrorResponse } from "../errors.js";
import type { TokenReservation } from "../limits/RateLimiter.js";
import type { CallKind } from "../limits/tiers.js";
import { recordRequestUsage, type UsageRow } from "../store/usage.js";
import { CLIENT_CLOSED_REQUEST } from "./clientClosedRequest.js";
import { setModelHeaders } from "./modelHeaders.js";
import type { RequestContext } from "./requestContext.js";
import { type SseFraming, SseStream } from "./sse.js";

/** What the metered path needs of the app. */
export type MeteredDeps = Pick<AppDeps, "credits" | "limits" | "db">;

/** The counts a usage row carries besides identity, endpoint, model and status. */
export type UsageCounts = Partial<Pick<UsageRow, "promptTokens" | "completionTokens" | "cachedTokens" | "finishReason" | "characters" | "audioSeconds">>;

/** How a metered request ended, for the hooks that run before its hold is released. */
export interface MeteredExit {
  status: number;
  /** Whether the work threw (also when the client had left). */
  failed: boolean;
  /** Whether the status line went out (a stream that started, then failed or was cut short). */
  delivered: boolean;
}

export interface MeteredOptions {
  /** The endpoint its usage row names ("/chat/completions"). */
  endpoint: string;
  /** The clock of the usage row (default: the wall clock). */
  now?: () => number;
}

/**
 * One paid request, from admission to its usage row. A route runs its work inside
 * `metered(...)` and asks this object for what the work needs, in the order the endpoint wants:
 *
 * - `admit(entry, kind)`: the key's model privacy and rate limit (403 / 429), with the
 *   x-ratelimit-* and balance headers (`admitEndpoint` for an endpoint that runs no model);
 * - `meterFor(model)`: a credit meter (reserve before inference, settle once after);
 * - `hold(lease)`: a model lease, released whatever happens;
 * - `countTokens(entry)` / `reserveTokens(count)`: the key's tokens per minute (text models);
 * - `record(model)`: from here on the request writes a usage row (refusals before it do not);
 * - `serve(entry, router)`: the x-service-model-* headers;
 * - `sse()`: a server-sent event stream (an error after its first byte goes into the stream);
 * - `usage`: the counts the usage row carries, filled in as the work learns them;
 * - `onExit(hook)`: charges what was delivered when the work stopped half-way.
 *
 * `metered` then does the rest in one place: the client going away is a 499 (nothing more is
 * sent), an error before the first byte is thrown to the error handler, one after it goes into
 * the stream (or cuts it), and one `finally` charges, releases and records.
 */
export class MeteredRequest {
  readonly ctx: RequestContext;
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal;
  usage: UsageCounts = {};
  private model: string | undefined;
  private committed = false;
  private stream: SseStream | undefined;
  private readonly meters: RequestMeter[] = [];
  private readonly leases: { release(): void }[] = [];
  private readonly exitHooks: ((exit: MeteredExit) => void)[] = [];
  private tokenEntry: ModelEntry | undefined;
  private tokens: TokenReservation | undefined;
  private labels: Pick<UsageRow, "user" | "metadata"> = {};

  constructor(
    private readonly deps: MeteredDeps,
    readonly res: Response,
  ) {
    this.ctx = res.locals.ctx;
    this.signal = this.ctx.abort.signal;
  }

  /**
   * Model privacy and rate limit (403 / 429); sets the x-ratelimit-* headers and, unless the
   * request shows its balance later (chat, once audio parts are charged), the balance headers.
   */
  admit(entry: ModelEntry, kind: CallKind, options: { showBalance?: boolean } = {}): void {
    this.res.set(this.deps.limits.admit(this.ctx, entry, kind));
    if (options.showBalance !== false) this.showBalance();
  }

  /** The key's rate limit on an endpoint that runs no model (429), with the x-ratelimit-* and balance headers. */
  admitEndpoint(scope: string, limitClass: "augment"): void {
    this.res.set(this.deps.limits.admitEndpoint(this.ctx, scope, limitClass));
    this.showBalance();
  }

  /** The x-service-balance-* headers: the caller's balances before this request. */
  showBalance(): void {
    const auth = this.ctx.auth;
    if (auth) this.res.set(balanceHeaders(this.deps.credits.snapshot(auth.accountId)));
  }

  /** A credit meter for work on `model`; a hold it still has when the request ends is released. */
  meterFor(model: string): RequestMeter {
    const meter = new RequestMeter(this.deps.credits, this.ctx, model);
    this.meters.push(meter);
    return meter;
  }

  /** Keeps a model lease until the request ends. */
  hold<L extends { release(): void }>(lease: L): L {
    this.leases.push(lease);
    return lease;
  }

  /** The request's tokens count against the key's tokens per minute on `entry` (text models). */
  countTokens(entry: ModelEntry): void {
    this.tokenEntry = entry;
  }

  /** Holds the most tokens the request can use (prompt + max) against the key's TPM; throws 429. */
  reserveTokens(count: number): void {
    const entry = this.tokenEntry;
    if (!entry) throw new Error("reserveTokens before countTokens");
    this.tokens?.settle(0);
    this.tokens = this.deps.limits.reserveTokens(this.ctx, entry, "chat", count);
    if (this.tokens && !this.res.headersSent) this.res.set(this.tokens.headers);
  }

  /** The end user and labels the request names (chat and responses `user`, `metadata`): kept on its usage row. */
  attribute(labels: { user?: string | null; metadata?: Record<string, string> | null }): void {
    this.labels = { user: labels.user ?? null, metadata: labels.metadata ? JSON.stringify(labels.metadata) : null };
  }

  /** From here on the request writes a usage row naming `model`, whatever happens. */
  record(model: string): void {
    this.model = model;
  }

  /** The x-service-model-* headers. */
  serve(entry: ModelEntry, router: string): void {
    setModelHeaders(this.res, entry, router);
  }

  /** The response as server-sent events (opened by its first event); the first call's framing holds. */
  sse(framing?: SseFraming): SseStream {
    this.stream ??= new SseStream(this.res, framing);
    return this.stream;
  }

  /**
   * The response is under way from here (a stream about to send its first bytes): an error
   * now cuts it short instead of becoming a status, and what was produced is charged.
   */
  commit(): void {
    this.committed = true;
  }

  /** Whether the status line went out, or a stream committed to it. */
  get delivered(): boolean {
    return this.committed || this.res.headersSent;
  }

  /** Runs once the work is over (in the order added), before unsettled holds are released. */
  onExit(hook: (exit: MeteredExit) => void): void {
    this.exitHooks.push(hook);
  }

  get clientGone(): boolean {
    return this.signal.aborted;
  }

  /** @internal the one `finally` of `metered`. */
  finish(status: number, failed: boolean, now: number | undefined, endpoint: string): void {
    const exit = { status, failed, delivered: this.delivered };
    try {
      for (const hook of this.exitHooks) hook(exit);
    } finally {
      // Settling is idempotent: this releases the holds the work did not settle (nothing is charged then).
      for (const meter of this.meters) meter.settle([]);
      for (const lease of this.leases) lease.release();
      if (this.tokenEntry) {
        const used = (this.usage.promptTokens ?? 0) + (this.usage.completionTokens ?? 0);
        if (this.tokens) this.tokens.settle(used);
        else this.deps.limits.recordTokens(this.ctx, this.tokenEntry, used);
      }
      if (this.model !== undefined) recordRequestUsage(this.deps.db, this.ctx, { endpoint, model: this.model, status, ...this.usage, ...this.labels }, now);
    }
  }

  /** @internal what an error means for the response, once caught by `metered`. */
  fail(error: unknown): { status: number; rethrow: boolean } {
    if (this.clientGone) {
      // Nobody is left to answer; the work's failure is kept for debugging only.
      this.ctx.log.debug({ err: error }, "the client went away; the work ended with an error");
      return { status: CLIENT_CLOSED_REQUEST, rethrow: false };
    }
    const status = toErrorResponse(error).status;
    if (!this.delivered) return { status, rethrow: true };
    // The status line went out: an event stream says why in an error event, anything else is cut short.
    if (this.stream) this.stream.fail(error);
    else this.res.destroy(error as Error);
    return { status, rethrow: false };
  }
}

/**
 * Runs a paid request's work (see MeteredRequest) with the one envelope every paid endpoint
 * shares: 499 when the client left, errors to the handler or into the started stream, and
 * in `finally` the charge of what was delivered, the release of holds and leases, the TPM
 * settlement and the usage row.
 */
export async function metered(deps: MeteredDeps, res: Response, options: MeteredOptions, work: (request: MeteredRequest) => Promise<void> | void): Promise<void> {
  const request = new MeteredRequest(deps, res);
  let status = 200;
  let failed = false;
  try {
    await work(request);
    if (request.clientGone) status = CLIENT_CLOSED_REQUEST;
  } catch (error) {
    const failure = request.fail(error);
    status = failure.status;
    failed = true;
    if (failure.rethrow) throw error;
  } finally {
    request.finish(status, failed, options.now?.(), options.endpoint);
  }
}
