import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Credits } from "../../src/billing/credits.js";
import { costLine } from "../../src/billing/money.js";
import { JobQueue, type JobHandler } from "../../src/jobs/JobQueue.js";
import { createLogger } from "../../src/logger.js";
import { createAccount } from "../../src/store/accounts.js";
import { getJob, insertJob } from "../../src/store/jobs.js";
import { getBalances, ledgerTotals } from "../../src/store/ledger.js";
import { openStore, type Db } from "../../src/store/Store.js";

/**
 * The queue's rules on a real SQLite database, with job handlers standing in at the job-kind
 * seam (the video handler is covered end to end in test/e2e/video*.test.ts).
 */

const logger = createLogger("silent");
let queues: JobQueue[] = [];
afterEach(async () => {
  await Promise.all(queues.map((q) => q.stop()));
  queues = [];
});

function setup(bootId = "boot-a") {
  const db = openStore(":memory:");
  const credits = new Credits(db, { resetHourUtc: 0, now: Date.now, bootId });
  const account = createAccount(db, "jobs");
  credits.grant(account.id, "USD", 1_000_000, "test");
  return { db, credits, accountId: account.id };
}

/** Queues a paid job the way VideoService does: charge and row in one transaction. */
function queuePaid(db: Db, credits: Credits, accountId: string, id: string, usdMicros = 100_000) {
  db.transaction(() => {
    const lines = [costLine("test-video-second", usdMicros / 1000, 1, { usd: 0.001, diem: 0.001 })];
    const hold = credits.reserve({ requestId: id, accountId, apiKeyId: null, maxLines: lines });
    credits.settle(hold, lines, { model: "m" });
    insertJob(db, { id, kind: "test", model: "m", accountId, apiKeyId: null, inputJson: "{}", chargedUsdMicros: usdMicros, chargedDiemMicros: 0, createdAt: Date.now() });
  }).immediate();
}

function queueWith(db: Db, credits: Credits, handler: JobHandler, options: { workers?: number; maxAttempts?: number; bootId?: string } = {}) {
  const queue = new JobQueue(db, credits, {
    workers: options.workers ?? 1,
    maxAttempts: options.maxAttempts ?? 3,
    retentionMs: 60_000,
    bootId: options.bootId ?? "boot-a",
    now: Date.now,
    logger,
    pollMs: 20,
  }).register("test", handler);
  queues.push(queue);
  return queue;
}

const until = async (check: () => boolean, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 10));
  }
};

const done = (path = "/dev/null") => ({ path, bytes: 0, contentType: "video/mp4" });

describe("JobQueue", () => {
  it("runs up to `workers` jobs at once, oldest first", async () => {
    const { db, credits, accountId } = setup();
    let running = 0;
    let peak = 0;
    const order: string[] = [];
    const queue = queueWith(
      db,
      credits,
      {
        async run(job) {
          order.push(job.id);
          peak = Math.max(peak, ++running);
          await new Promise((r) => setTimeout(r, 60));
          running--;
          return done();
        },
      },
      { workers: 2 },
    );
    for (const id of ["j1", "j2", "j3", "j4"]) queuePaid(db, credits, accountId, id);
    queue.start();
    await until(() => ["j1", "j2", "j3", "j4"].every((id) => getJob(db, id)?.status === "COMPLETED"));
    expect(peak).toBe(2);
    expect(order.slice(0, 2).sort()).toEqual(["j1", "j2"]);
  });

  it("a failed job is refunded exactly once", async () => {
    const { db, credits, accountId } = setup();
    const queue = queueWith(db, credits, { run: async () => Promise.reject(new Error("model exploded")) });
    queuePaid(db, credits, accountId, "bad");
    expect(getBalances(db, accountId).USD).toBe(900_000);
    queue.start();
    await until(() => getJob(db, "bad")?.status === "FAILED");
    expect(getJob(db, "bad")!.error).toBe("Generation failed: model exploded");
    expect(getBalances(db, accountId).USD).toBe(1_000_000);
    expect(queue.fail("bad", "again")).toBe(false);
    expect(getBalances(db, accountId).USD).toBe(1_000_000);
    expect(ledgerTotals(db, accountId)).toEqual(getBalances(db, accountId));
  });

  it("stop() puts running jobs back without counting the attempt", async () => {
    const { db, credits, accountId } = setup();
    const queue = queueWith(db, credits, {
      run: (_job, { signal }) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    });
    queuePaid(db, credits, accountId, "long");
    queue.start();
    await until(() => getJob(db, "long")?.status === "RUNNING");
    await queue.stop();
    expect(getJob(db, "long")).toMatchObject({ status: "QUEUED", attempts: 0, progress: 0 });
    expect(getBalances(db, accountId).USD).toBe(900_000);
  });

  it("after a crash: requeues what the dead process ran, fails (and refunds) what ran out of attempts", async () => {
    const path = join(tmpdir(), `hearth-jobqueue-${process.pid}.db`);
    try {
      const { db, credits, accountId } = (() => {
        const db = openStore(path);
        const credits = new Credits(db, { resetHourUtc: 0, now: Date.now, bootId: "dead" });
        const account = createAccount(db, "jobs");
        credits.grant(account.id, "USD", 1_000_000, "test");
        return { db, credits, accountId: account.id };
      })();
      queuePaid(db, credits, accountId, "fresh");
      queuePaid(db, credits, accountId, "tired");
      // The state a process killed mid-job leaves behind (no store function writes it on purpose): raw SQL.
      db.prepare("UPDATE jobs SET status = 'RUNNING', boot_id = 'dead', attempts = 1 WHERE id = 'fresh'").run();
      db.prepare("UPDATE jobs SET status = 'RUNNING', boot_id = 'dead', attempts = 3 WHERE id = 'tired'").run();
      db.close();

      // The next process: holds of the dead one are released (there are none: jobs are charged, not held).
      const next = openStore(path);
      const credits2 = new Credits(next, { resetHourUtc: 0, now: Date.now, bootId: "alive" });
      expect(credits2.releaseOrphanedHolds()).toBe(0);
      const queue = queueWith(next, credits2, { run: async () => done() }, { bootId: "alive" });
      expect(queue.recover()).toEqual({ requeued: 1, failed: 1 });
      expect(getJob(next, "fresh")).toMatchObject({ status: "QUEUED", attempts: 1 });
      expect(getJob(next, "tired")).toMatchObject({ status: "FAILED" });
      expect(getJob(next, "tired")!.error).toMatch(/interrupted by 3 restarts/);
      expect(getBalances(next, accountId).USD).toBe(900_000);
      queue.start();
      await until(() => getJob(next, "fresh")?.status === "COMPLETED");
      expect(getJob(next, "fresh")!.attempts).toBe(2);
      expect(ledgerTotals(next, accountId)).toEqual(getBalances(next, accountId));
      await queue.stop();
      next.close();
    } finally {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
    }
  });
});
