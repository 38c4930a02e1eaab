import { execFile } from "node:child_process";
import { describe, expect, it } from "vitest";
import type { IdleCollection } from "../../src/garbageCollection.js";

// V8 keeps the young generation a burst of allocation grew (32 MB committed on Node 20 and 22,
// 128 MB on Node 24) until a collection finds allocation low over its last 5 s, and V8 12+ keeps
// what a plain full collection frees in a pool of its own. The idle collector closes the burst's
// measurement with a young collection, then runs the full one (V8's last resort where it has one)
// after that window. Measured in a process of its own: a test worker's resident memory moves
// with whatever earlier files loaded.

interface Outcome {
  grown: number;
  newSpaceAfter: number;
  anonymousBefore: number;
  anonymousAfter: number;
  waitedMs: number;
  reports: IdleCollection[];
  stoppedReports: IdleCollection[];
}

const script = `
  import { readFileSync } from "node:fs";
  import { getHeapSpaceStatistics } from "node:v8";
  const { IdleHeapCollector, fullGarbageCollection } = await import(${JSON.stringify(new URL("../../src/garbageCollection.ts", import.meta.url).href)});
  const newSpace = () => getHeapSpaceStatistics().find((space) => space.space_name === "new_space").space_size;
  const anonymous = () => Number(/RssAnon:\\s+(\\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))[1]) * 1024;
  // Short-lived objects, as a burst of requests leaves: V8 grows its young generation for them.
  let kept = [];
  for (let index = 0; index < 3_000_000; index++) {
    kept.push({ index, text: String(index) });
    if (kept.length > 200_000) kept = [];
  }
  kept = [];
  // Then a last request's worth after the burst's last collection (6 MB, under the young
  // generation's size): what V8 measures at the next collection unless one comes between.
  fullGarbageCollection()({ type: "minor" });
  for (let index = 0; index < 150_000; index++) kept.push({ index, text: String(index) });
  kept = [];
  const grown = newSpace();
  const anonymousBefore = anonymous();
  const reports = [];
  const stoppedReports = [];
  const quiet = new IdleHeapCollector({ report: (collection) => reports.push(collection) });
  const interrupted = new IdleHeapCollector({ report: (collection) => stoppedReports.push(collection) });
  quiet.start();
  interrupted.start();
  quiet.start(); // a second start while one is pending changes nothing
  interrupted.stop(); // the node got busy again before the full collection was due
  const started = performance.now();
  while (reports.length === 0 && performance.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 100));
  const waitedMs = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, 200));
  console.log(JSON.stringify({ grown, newSpaceAfter: newSpace(), anonymousBefore, anonymousAfter: anonymous(), waitedMs, reports, stoppedReports }));`;

function runInOwnProcess(): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as Outcome);
    });
  });
}

describe("IdleHeapCollector", () => {
  it.runIf(process.platform === "linux")("hands the young generation a burst grew back to the system, and runs no full collection once stopped", { timeout: 40_000 }, async () => {
    const outcome = await runInOwnProcess();
    expect(outcome.grown).toBeGreaterThanOrEqual(8 * 2 ** 20);
    expect(outcome.reports).toHaveLength(1);
    expect(outcome.waitedMs).toBeGreaterThanOrEqual(5_000);
    const [collection] = outcome.reports;
    expect(collection!.fullMs).toBeGreaterThan(0);
    expect(collection!.heapBytesAfter).toBeLessThan(collection!.heapBytesBefore);
    expect(outcome.newSpaceAfter).toBeLessThanOrEqual(outcome.grown / 4);
    // Back to the system at once, not only free in V8's own accounts.
    expect(outcome.anonymousAfter).toBeLessThanOrEqual(outcome.anonymousBefore - outcome.grown / 2);
    expect(outcome.stoppedReports).toHaveLength(0);
  });
});
