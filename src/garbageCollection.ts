import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * V8's `gc`: a full collection by default, a young-generation one with `{ type: "minor" }`, and
 * from V8 12 (Node 22) V8's collection of last resort with `flavor: "last-resort"`: collections
 * until nothing more is freed, told to reduce memory, which hands freed pages back to the system.
 */
export type GarbageCollection = (options?: { type?: "minor" | "major"; flavor?: "regular" | "last-resort" }) => void;

let resolvedGc: GarbageCollection | null | undefined;

/**
 * V8's full collection: `gc` when Node started with --expose-gc, else the same function taken from
 * a fresh context created while the flag is briefly on (the flag then goes off again, so no later
 * context gets it). Null if neither works.
 */
export function fullGarbageCollection(): GarbageCollection | null {
  if (resolvedGc !== undefined) return resolvedGc;
  const global = (globalThis as { gc?: unknown }).gc;
  if (typeof global === "function") return (resolvedGc = global as GarbageCollection);
  try {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as unknown;
    resolvedGc = typeof gc === "function" ? (gc as GarbageCollection) : null;
  } catch {
    resolvedGc = null;
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
  return resolvedGc;
}

/**
 * Where V8 takes `flavor` (12 and later): V8 11 (Node 20) reads `{ type: "major", flavor: … }` as
 * something else and frees nothing, while its plain full collection already hands the pages back.
 */
const LAST_RESORT_FLAVOR = Number(process.versions.v8.split(".")[0]) >= 12;

/**
 * V8 11 (Node 20) measures allocation between collections and shrinks its young generation (32 MB
 * committed once a burst has grown it) only in a collection that finds less than 1 KB/ms
 * allocated over the last 5 s. So a full collection right after a burst keeps it whole; one 5 s
 * after a young collection that closed the burst's measurement gives it back. V8 12+'s last
 * resort shrinks it at any time; the same two steps serve both, one path to reason about.
 */
const ALLOCATION_WINDOW_MS = 5_500;

/** What one idle collection did. */
export interface IdleCollection {
  heapBytesBefore: number;
  heapBytesAfter: number;
  /** How long the full collection held the event loop. */
  fullMs: number;
}

export interface IdleHeapCollectorOptions {
  report: (collection: IdleCollection) => void;
  /** Marks the full collection as what holds the event loop (the stall watch names it); returns its end. */
  beginHold?: () => () => void;
}

/**
 * Gives the JavaScript heap a quiet node no longer uses back to the system, in V8's terms: a young
 * collection when `start` is called, then the full one after V8's allocation window unless `stop`
 * comes first (the node got busy again: the caller starts again at its next quiet spell).
 */
export class IdleHeapCollector {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: IdleHeapCollectorOptions) {}

  start(): void {
    const gc = fullGarbageCollection();
    if (!gc || this.timer) return;
    gc({ type: "minor" });
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const heapBytesBefore = getHeapStatistics().total_heap_size;
      const endHold = this.options.beginHold?.();
      const started = performance.now();
      // V8 12+ keeps the pages a plain full collection frees in a pool of its own for seconds to a
      // minute (Node 22: RSS unchanged after it, 198 → 55 MB with the last resort in a probe).
      gc(LAST_RESORT_FLAVOR ? { type: "major", flavor: "last-resort" } : undefined);
      const fullMs = performance.now() - started;
      endHold?.();
      this.options.report({ heapBytesBefore, heapBytesAfter: getHeapStatistics().total_heap_size, fullMs });
    }, ALLOCATION_WINDOW_MS);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
