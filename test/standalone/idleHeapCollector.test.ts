import { readFileSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";
import { describe, expect, it } from "vitest";
import { type IdleCollection, IdleHeapCollector } from "../../src/garbageCollection.js";

// V8 keeps the young generation a burst of allocation grew (32 MB committed on a 64-bit Node)
// until a collection finds allocation low over its last 5 s. The idle collector closes the burst's
// measurement with a young collection, then runs the full one after that window.

/** Resident anonymous memory (Linux): what the system gets back, not only what V8 counts as free. */
const anonymousBytes = () => (process.platform === "linux" ? Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))![1]) * 1024 : Number.NaN);
const newSpaceBytes = () => getHeapSpaceStatistics().find((space) => space.space_name === "new_space")!.space_size;

/** Short-lived objects, as a burst of requests leaves: V8 grows its young generation for them. */
function burst(): void {
  let kept: { index: number; text: string }[] = [];
  for (let index = 0; index < 3_000_000; index++) {
    kept.push({ index, text: String(index) });
    if (kept.length > 200_000) kept = [];
  }
}

describe("IdleHeapCollector", () => {
  it("gives back the young generation a burst grew, and runs no full collection where the node was busy again", { timeout: 20_000 }, async () => {
    burst();
    const grown = newSpaceBytes();
    expect(grown).toBeGreaterThanOrEqual(8 * 2 ** 20);
    const residentBefore = anonymousBytes();

    const reports: IdleCollection[] = [];
    const busyReports: IdleCollection[] = [];
    const quiet = new IdleHeapCollector({ report: (collection) => reports.push(collection) });
    const busy = new IdleHeapCollector({ report: (collection) => busyReports.push(collection) });
    quiet.start();
    busy.start();
    quiet.start(); // a second start while one is pending changes nothing
    busy.stop(); // the node got busy again before the full collection was due
    const started = performance.now();
    while (reports.length === 0 && performance.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 100));

    expect(reports).toHaveLength(1);
    expect(performance.now() - started).toBeGreaterThanOrEqual(5_000);
    expect(reports[0]!.fullMs).toBeGreaterThan(0);
    expect(reports[0]!.heapBytesAfter).toBeLessThan(reports[0]!.heapBytesBefore);
    expect(newSpaceBytes()).toBeLessThanOrEqual(grown / 4);
    // Handed back to the system at once (V8 12+ would keep the pages of a plain full collection
    // in its own pool for seconds to a minute).
    if (process.platform === "linux") expect(anonymousBytes()).toBeLessThanOrEqual(residentBefore - grown / 2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(busyReports).toHaveLength(0);
    quiet.stop();
    busy.stop();
  });
});
