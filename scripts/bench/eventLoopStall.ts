import { monitorEventLoopDelay } from "node:perf_hooks";

/**
 * Runs `work` and reports the longest time this thread's event loop could not turn meanwhile:
 * in a server running in the same process, the longest any other request (a chat stream's next
 * token, a health check) had to wait because of it. Sampled every 5 ms.
 */
export async function withLoopStall<T>(work: () => Promise<T>): Promise<{ value: T; longestStallMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  try {
    const value = await work();
    histogram.disable();
    // The histogram holds delays past the sampling interval, in nanoseconds (0 when none was taken).
    return { value, longestStallMs: Math.round(histogram.max / 1e5) / 10 };
  } finally {
    histogram.disable();
  }
}
