import { availableParallelism } from "node:os";

/**
 * How many CPU threads decode one batch. A batch of one token (a lone stream's next token) is
 * memory-bound, and when llama.cpp has a thread on every core, Node's own threads (the event
 * loop, V8's helpers) preempt one of them now and then and every barrier of the graph waits for
 * it: on the 2-core machine a lone token took 32.5 ms (median) on 2 threads and 26.3 ms on 1,
 * while 2 tokens took 60 ms on 2 threads and 82 ms on 1 (docs/bench.md). So "auto" leaves one
 * core to Node for single-token batches when the context's threads take every core, and uses
 * them all for anything larger.
 */
export function threadsForBatch(singleTokenThreads: number | "auto", cores = availableParallelism()) {
  return ({ batchSize, threads }: { batchSize: number; threads: number }): number => {
    if (batchSize !== 1) return threads;
    if (singleTokenThreads !== "auto") return Math.min(threads, singleTokenThreads);
    return threads > 1 && threads >= cores ? threads - 1 : threads;
  };
}
