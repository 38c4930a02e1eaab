import { rmSync } from "node:fs";
import type { Credits } from "../billing/credits.js";
import type { Logger } from "../logger.js";
import type { Db } from "../store/Store.js";
import { inTransaction } from "../store/transaction.js";
import { claimNextJob, completeJob, expiredJobResults, failJob, getJob, interruptedJobs, markJobDeleted, requeueJob, setJobProgress, type JobRow } from "../store/jobs.js";

/** What a job kind does with a claimed job: produce a result file, reporting progress in [0, 1]. */
export interface JobHandler {
  run(job: JobRow, context: { signal: AbortSignal; progress: (fraction: number) => void }): Promise<{ path: string; bytes: number; contentType: string }>;
}

export interface JobQueueOptions {
  /** Jobs run at the same time. */
  workers: number;
  /** Runs a job may start (restarts included) before it fails. */
  maxAttempts: number;
  /** Completed results are deleted this long after they finish. */
  retentionMs: number;
  bootId: string;
  now: () => number;
  logger: Logger;
  /** How often idle workers look for work they were not woken for (another process's rows). */
  pollMs?: number;
}

const PROGRESS_WRITE_MS = 250;
const SWEEP_MS = 60_000;

/**
 * The durable job queue: rows in SQLite, `workers` loops claiming the oldest queued row.
 *
 * Money: the full price is charged when the job is queued (in the transaction that inserts
 * the row: see VideoService.queue) and refunded, exactly once, if the job fails. No credit hold
 * outlives a request, so start-up's release of orphaned holds never touches a job, and a
 * restart can neither lose the charge nor take it twice.
 *
 * Restarts: a row left RUNNING by a dead process is queued again and starts from scratch
 * (generation is deterministic: same seed, same video); after `maxAttempts` starts it fails
 * and is refunded. A graceful shutdown puts running jobs back without counting the attempt.
 */
export class JobQueue {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly running = new Map<string, AbortController>();
  private loops: Promise<void>[] = [];
  private wakeUp: (() => void) | undefined;
  private stopping = false;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly credits: Credits,
    private readonly options: JobQueueOptions,
  ) {}

  register(kind: string, handler: JobHandler): this {
    this.handlers.set(kind, handler);
    return this;
  }

  /** Start-up: requeue or fail what a previous process left running. */
  recover(): { requeued: number; failed: number } {
    let requeued = 0;
    let failed = 0;
    for (const job of interruptedJobs(this.db, this.options.bootId)) {
      if (job.attempts >= this.options.maxAttempts) {
        if (this.fail(job.id, `Generation was interrupted by ${job.attempts} restarts of the server and was abandoned`)) failed++;
      } else {
        requeueJob(this.db, job.id, true);
        requeued++;
      }
    }
    if (requeued || failed) this.options.logger.warn({ requeued, failed }, "recovered jobs interrupted by a restart");
    return { requeued, failed };
  }

  start(): void {
    this.stopping = false;
    this.loops = Array.from({ length: this.options.workers }, () => this.loop());
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweepTimer.unref();
    this.sweep();
  }

  /** New work is queued: wake an idle worker. */
  notify(): void {
    this.wakeUp?.();
  }

  /** Jobs being generated right now. */
  get active(): number {
    return this.running.size;
  }

  /**
   * Stops claiming work; running jobs are interrupted and put back in the queue without
   * counting the attempt, to start again on the next start.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sweepTimer);
    for (const controller of this.running.values()) controller.abort(new JobInterruptedError());
    this.notify();
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** Fails a job and refunds its charge, once. Returns whether this call did it. */
  fail(id: string, message: string): boolean {
    return inTransaction(this.db, () => {
      if (!failJob(this.db, id, message, this.options.now())) return false;
      this.credits.refund(id, `refund: ${message}`);
      return true;
    });
  }

  /** Deletes a finished job's stored result. */
  deleteResult(job: JobRow): void {
    if (job.resultPath) rmSync(job.resultPath, { force: true });
    markJobDeleted(this.db, job.id, this.options.now());
  }

  private async loop(): Promise<void> {
    const kinds = [...this.handlers.keys()];
    while (!this.stopping) {
      const job = kinds.length ? claimNextJob(this.db, kinds, this.options.bootId, this.options.now()) : undefined;
      if (!job) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.options.pollMs ?? 1000);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        continue;
      }
      await this.runJob(job);
      // Others may be idle while more work is queued.
      this.notify();
    }
  }

  private async runJob(job: JobRow): Promise<void> {
    const controller = new AbortController();
    this.running.set(job.id, controller);
    let lastWrite = 0;
    const progress = (fraction: number) => {
      const now = Date.now();
      if (now - lastWrite < PROGRESS_WRITE_MS && fraction < 1) return;
      lastWrite = now;
      setJobProgress(this.db, job.id, Math.min(Math.max(fraction, 0), 0.999));
    };
    const log = this.options.logger.child({ job: job.id, kind: job.kind, model: job.model, attempt: job.attempts });
    log.info("job started");
    try {
      const result = await this.handlers.get(job.kind)!.run(job, { signal: controller.signal, progress });
      if (!completeJob(this.db, job.id, result, this.options.now())) rmSync(result.path, { force: true });
      log.info({ bytes: result.bytes }, "job completed");
    } catch (error) {
      if (controller.signal.reason instanceof JobInterruptedError) {
        requeueJob(this.db, job.id, false);
        log.info("job interrupted by shutdown; queued again");
      } else {
        const message = error instanceof Error ? error.message : String(error);
        this.fail(job.id, `Generation failed: ${message}`);
        log.error({ err: error }, "job failed");
      }
    } finally {
      this.running.delete(job.id);
    }
  }

  private sweep(): void {
    for (const job of expiredJobResults(this.db, this.options.now() - this.options.retentionMs)) {
      this.deleteResult(job);
    }
  }

  /** A job's current row. */
  get(id: string): JobRow | undefined {
    return getJob(this.db, id);
  }
}

export class JobInterruptedError extends Error {
  override name = "JobInterruptedError";
  constructor() {
    super("the server is shutting down");
  }
}
