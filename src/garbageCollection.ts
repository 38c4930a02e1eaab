import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** V8's `gc`: a full collection by default, a young-generation one with `{ type: "minor" }`. */
export type GarbageCollection = (options?: { type?: "minor" | "major" }) => void;

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
 * V8 measures allocation between collections and shrinks its young generation (32 MB committed
 * once a burst has grown it) only in a collection that finds less than 1 KB/ms allocated over the
 * last 5 s. So a full collection right after a burst keeps it whole; one 5 s after a young
 * collection that closed the burst's measurement gives it back.
 */
const ALLOCATION_WINDOW_MS = 5_500;

/** What one idle collection did. */
export interface IdleCollection {
  heapBytesBefore: number;
  heapBytesAfter: number;
  /** How long the full collection held the event loop. */
  fullMs: number;
}

/**
 * Gives the JavaScript heap a quiet node no longer uses back to the system, in V8's terms: a young
 * collection when `start` is called, then the full one after V8's allocation window if
 * `isQuiet()` still holds (else nothing: the caller starts again at its next quiet spell).
 */
export class IdleHeapCollector {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly isQuiet: () => boolean,
    private readonly report: (collection: IdleCollection) => void,
    private readonly gc: () => GarbageCollection | null = fullGarbageCollection,
  ) {}

  start(): void {
    const gc = this.gc();
    if (!gc || this.timer) return;
    gc({ type: "minor" });
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.isQuiet()) return;
      const heapBytesBefore = getHeapStatistics().total_heap_size;
      const started = performance.now();
      gc();
      const fullMs = performance.now() - started;
      this.report({ heapBytesBefore, heapBytesAfter: getHeapStatistics().total_heap_size, fullMs });
    }, ALLOCATION_WINDOW_MS);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
