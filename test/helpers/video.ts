import { getJob, type JobRow } from "../../src/store/jobs.js";
import type { Db } from "../../src/store/Store.js";

/**
 * Polls POST /video/retrieve (or /audio/retrieve) until the job completes; records the states it
 * passed through. The finished media is whatever answer is not JSON (`video` names it either way).
 */
export async function retrieveUntilDone(
  retrieve: () => Promise<Response>,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<{ video: Buffer; contentType: string; states: string[]; progress: number[] }> {
  const states: string[] = [];
  const progress: number[] = [];
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    const res = await retrieve();
    if (res.status !== 200) throw new Error(`retrieve answered ${res.status}: ${await res.text()}`);
    const contentType = res.headers.get("content-type") ?? "";
    if (!contentType.startsWith("application/json")) {
      states.push("COMPLETED");
      return { video: Buffer.from(await res.arrayBuffer()), contentType, states, progress };
    }
    const body = (await res.json()) as { status: string; state: string; progress: number };
    if (states.at(-1) !== body.state) states.push(body.state);
    progress.push(body.progress);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
  throw new Error(`the job did not complete in time (states: ${states.join(" -> ")})`);
}

/** Reads a job's row until it has `status` (or 10 s pass) and returns the last row read: a restarted node fails a job whose model is gone. */
export async function jobRowOnceStatus(db: Db, id: string, status: JobRow["status"]): Promise<JobRow> {
  let row = getJob(db, id)!;
  for (let i = 0; i < 200 && row.status !== status; i++) {
    await new Promise((r) => setTimeout(r, 50));
    row = getJob(db, id)!;
  }
  return row;
}
