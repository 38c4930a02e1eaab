import { randomUUID } from "node:crypto";
import type { Cost, Credits } from "../billing/credits.js";
import type { CostLine } from "../billing/money.js";
import { ApiError, InvalidRequestError, NotFoundError } from "../errors.js";
import type { AuthContext } from "../http/requestContext.js";
import { insertJob, jobsAhead, recentExecutionTimes, type JobRow } from "../store/jobs.js";
import type { Db } from "../store/Store.js";
import { inTransaction } from "../store/transaction.js";
import type { JobQueue } from "./JobQueue.js";

/** While a job runs: the reference's `status` (one value) and times, with where it stands. */
export interface JobStatusBody {
  status: "PROCESSING";
  average_execution_time: number;
  execution_duration: number;
  state: "QUEUED" | "RUNNING";
  progress: number;
  queue_position?: number;
}

/** A finished job whose generation failed: the error, and whether its charge came back. */
export class JobFailedError extends ApiError {
  constructor(job: JobRow, code: string, fallbackMessage: string) {
    super(500, job.error ?? fallbackMessage, { code, body: { status: "FAILED", credits_refunded: job.refundedAt !== null } });
  }
}

/**
 * The paid side of durable media jobs (video, audio), one way for every kind: queueing charges
 * the whole price in the transaction that inserts the row; a caller finds only its own jobs;
 * status, download and clean-up read the row the queue keeps. The generation is the job
 * queue's handler for the kind.
 */
export class PaidJobs {
  constructor(
    private readonly db: Db,
    private readonly credits: Credits,
    private readonly jobs: JobQueue,
    private readonly kind: string,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Charges `lines` and inserts the job in one transaction: either both happen or neither does,
   * so a crash cannot leave a paid job missing or a queued job unpaid.
   */
  queue(options: { model: string; auth: AuthContext | undefined; lines: readonly CostLine[]; input: unknown; note: string }): { queueId: string; cost: Cost } {
    const queueId = randomUUID();
    let cost: Cost = { usd: 0, diem: 0 };
    inTransaction(this.db, () => {
      let charged = { usd: 0, diem: 0 };
      const { auth } = options;
      if (auth) {
        const hold = this.credits.reserve({ requestId: queueId, accountId: auth.accountId, apiKeyId: auth.apiKeyId, maxLines: options.lines });
        const settled = this.credits.settle(hold, options.lines, { model: options.model, note: options.note });
        cost = settled.cost;
        for (const p of settled.payments) charged = p.currency === "DIEM" ? { ...charged, diem: charged.diem + p.micros } : { ...charged, usd: charged.usd + p.micros };
      }
      insertJob(this.db, {
        id: queueId,
        kind: this.kind,
        model: options.model,
        accountId: auth?.accountId ?? null,
        apiKeyId: auth?.apiKeyId ?? null,
        inputJson: JSON.stringify(options.input),
        chargedUsdMicros: charged.usd,
        chargedDiemMicros: charged.diem,
        createdAt: this.now(),
      });
    });
    this.jobs.notify();
    return { queueId, cost };
  }

  /** The caller's job of this kind and model, not deleted (404 otherwise, without saying which). */
  find(model: string, queueId: string, auth: AuthContext | undefined): JobRow {
    const job = this.jobs.get(queueId);
    if (!job || job.kind !== this.kind || job.model !== model || job.deletedAt !== null || (job.accountId !== null && job.accountId !== auth?.accountId)) {
      throw new NotFoundError("Media could not be found. The request may be invalid, expired, or deleted.");
    }
    return job;
  }

  status(job: JobRow): JobStatusBody {
    const now = this.now();
    const body: JobStatusBody = {
      status: "PROCESSING",
      average_execution_time: this.averageExecutionMs(job, now),
      execution_duration: now - job.createdAt,
      state: job.status === "RUNNING" ? "RUNNING" : "QUEUED",
      progress: Math.round(job.progress * 1000) / 1000,
    };
    if (job.status === "QUEUED") body.queue_position = jobsAhead(this.db, job) + 1;
    return body;
  }

  /** P80 of this model's recent run times; without history, what the running job's progress implies. */
  private averageExecutionMs(job: JobRow, now: number): number {
    const times = recentExecutionTimes(this.db, job.model, 50).sort((a, b) => a - b);
    if (times.length) return times[Math.min(times.length - 1, Math.floor(times.length * 0.8))]!;
    if (job.status === "RUNNING" && job.startedAt !== null && job.progress > 0.02) return Math.round((now - job.startedAt) / job.progress);
    return 0;
  }

  /** Where the finished media is stored (sent from there: http/sendStoredFile.ts). */
  mediaPath(job: JobRow): string {
    return job.resultPath!;
  }

  /** Deletes a finished job's media; a job still being generated is a 400 naming `queue_id`. */
  complete(job: JobRow, noun: string): void {
    if (job.status === "QUEUED" || job.status === "RUNNING") {
      throw InvalidRequestError.forField(["queue_id"], `the ${noun} is still processing; complete it after it is retrieved`);
    }
    this.jobs.deleteResult(job);
  }
}
