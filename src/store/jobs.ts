import { statement, type Db } from "./Store.js";

/** Durable job rows (see migration 300). Statements only; the rules live in jobs/JobQueue.ts. */

export type JobStatus = "QUEUED" | "RUNNING" | "COMPLETED" | "FAILED";

export interface JobRow {
  id: string;
  kind: string;
  model: string;
  accountId: string | null;
  apiKeyId: string | null;
  inputJson: string;
  status: JobStatus;
  attempts: number;
  progress: number;
  error: string | null;
  resultPath: string | null;
  resultBytes: number | null;
  resultContentType: string | null;
  chargedUsdMicros: number;
  chargedDiemMicros: number;
  refundedAt: number | null;
  bootId: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  deletedAt: number | null;
}

const SELECT = `SELECT id, kind, model, account_id AS accountId, api_key_id AS apiKeyId, input_json AS inputJson, status, attempts,
  progress, error, result_path AS resultPath, result_bytes AS resultBytes, result_content_type AS resultContentType,
  charged_usd_micros AS chargedUsdMicros, charged_diem_micros AS chargedDiemMicros, refunded_at AS refundedAt, boot_id AS bootId,
  created_at AS createdAt, started_at AS startedAt, finished_at AS finishedAt, deleted_at AS deletedAt FROM jobs`;

export function insertJob(
  db: Db,
  job: Pick<JobRow, "id" | "kind" | "model" | "accountId" | "apiKeyId" | "inputJson" | "chargedUsdMicros" | "chargedDiemMicros" | "createdAt">,
): void {
  statement(
    db,
    `INSERT INTO jobs (id, kind, model, account_id, api_key_id, input_json, status, charged_usd_micros, charged_diem_micros, created_at)
     VALUES (@id, @kind, @model, @accountId, @apiKeyId, @inputJson, 'QUEUED', @chargedUsdMicros, @chargedDiemMicros, @createdAt)`,
  ).run(job);
}

export function getJob(db: Db, id: string): JobRow | undefined {
  return statement(db, `${SELECT} WHERE id = ?`).get(id) as JobRow | undefined;
}

/** An account's jobs, oldest first (deleted ones included). */
export function listAccountJobs(db: Db, accountId: string): JobRow[] {
  return statement(db, `${SELECT} WHERE account_id = ? ORDER BY created_at, rowid`).all(accountId) as JobRow[];
}

/** Takes the oldest queued job of the given kinds for this process, atomically. */
export function claimNextJob(db: Db, kinds: readonly string[], bootId: string, now: number): JobRow | undefined {
  const placeholders = kinds.map(() => "?").join(", ");
  const claimed = statement(
    db,
    `UPDATE jobs SET status = 'RUNNING', attempts = attempts + 1, progress = 0, started_at = ?, boot_id = ?
       WHERE id = (SELECT id FROM jobs WHERE status = 'QUEUED' AND kind IN (${placeholders}) ORDER BY created_at, rowid LIMIT 1)
       RETURNING id`,
  )
    .pluck()
    .get(now, bootId, ...kinds) as string | undefined;
  return claimed ? getJob(db, claimed) : undefined;
}

export function setJobProgress(db: Db, id: string, progress: number): void {
  statement(db, "UPDATE jobs SET progress = ? WHERE id = ? AND status = 'RUNNING'").run(progress, id);
}

export function completeJob(db: Db, id: string, result: { path: string; bytes: number; contentType: string }, now: number): boolean {
  return (
    statement(
      db,
      `UPDATE jobs SET status = 'COMPLETED', progress = 1, result_path = ?, result_bytes = ?, result_content_type = ?, finished_at = ?, error = NULL
         WHERE id = ? AND status = 'RUNNING'`,
    ).run(result.path, result.bytes, result.contentType, now, id).changes > 0
  );
}

/** Back to the queue; `keepAttempt: false` when the interruption was not the job's doing (a graceful shutdown). */
export function requeueJob(db: Db, id: string, keepAttempt: boolean): void {
  statement(db, `UPDATE jobs SET status = 'QUEUED', progress = 0, started_at = NULL, boot_id = NULL, attempts = attempts - ? WHERE id = ? AND status = 'RUNNING'`).run(
    keepAttempt ? 0 : 1,
    id,
  );
}

/** Marks a job failed; true only for the call that did it (the refund guard). */
export function failJob(db: Db, id: string, error: string, now: number): boolean {
  return (
    statement(
      db,
      `UPDATE jobs SET status = 'FAILED', error = ?, finished_at = ?, refunded_at = ?
         WHERE id = ? AND status IN ('QUEUED', 'RUNNING') AND refunded_at IS NULL`,
    ).run(error, now, now, id).changes > 0
  );
}

/** Jobs another process was running when it stopped. */
export function interruptedJobs(db: Db, bootId: string): JobRow[] {
  return statement(db, `${SELECT} WHERE status = 'RUNNING' AND (boot_id IS NULL OR boot_id <> ?) ORDER BY created_at`).all(bootId) as JobRow[];
}

export function markJobDeleted(db: Db, id: string, now: number): void {
  statement(db, "UPDATE jobs SET deleted_at = ?, result_path = NULL WHERE id = ? AND deleted_at IS NULL").run(now, id);
}

/** Finished jobs whose stored result is older than `before`. */
export function expiredJobResults(db: Db, before: number): JobRow[] {
  return statement(db, `${SELECT} WHERE status = 'COMPLETED' AND deleted_at IS NULL AND finished_at < ?`).all(before) as JobRow[];
}

/** Run times (ms) of the most recent completed jobs of a model. */
export function recentExecutionTimes(db: Db, model: string, limit: number): number[] {
  return statement(db, "SELECT finished_at - started_at FROM jobs WHERE model = ? AND status = 'COMPLETED' AND started_at IS NOT NULL ORDER BY finished_at DESC LIMIT ?")
    .pluck()
    .all(model, limit) as number[];
}

/** How many queued jobs of the same kind are ahead of this one. */
export function jobsAhead(db: Db, job: JobRow): number {
  return statement(db, "SELECT COUNT(*) FROM jobs WHERE status = 'QUEUED' AND kind = ? AND (created_at < ? OR (created_at = ? AND rowid < (SELECT rowid FROM jobs WHERE id = ?)))")
    .pluck()
    .get(job.kind, job.createdAt, job.createdAt, job.id) as number;
}
