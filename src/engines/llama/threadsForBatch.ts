import type { BackendNotice } from "../BackendDescriptor.js";
import { availableParallelism } from "node:os";

/**
 * libuv's thread pool size, which node-llama-cpp's decodes run on: UV_THREADPOOL_SIZE as the
 * process started with (libuv reads it once, when the pool starts), else libuv's default of 4.
 * Read as libuv reads it: the leading digits, 1 for none or 0, at most 1024.
 */
export function libuvPoolSize(env: NodeJS.ProcessEnv = process.env): number {
  if (env.UV_THREADPOOL_SIZE === undefined) return 4;
  const size = Number.parseInt(env.UV_THREADPOOL_SIZE, 10);
  return Math.min(1024, Number.isNaN(size) || size <= 0 ? 1 : size);
}

/** libuv's pool size and who chose it, for the server's start-up log. */
export function describeLibuvPool(env: NodeJS.ProcessEnv = process.env): { size: number; chosenBy: string } {
  const size = libuvPoolSize(env);
  if (env.HEARTH_LIBUV_POOL_REASON) return { size, chosenBy: `hearth: ${env.HEARTH_LIBUV_POOL_REASON}` };
  return { size, chosenBy: env.UV_THREADPOOL_SIZE === undefined ? "libuv's default" : "UV_THREADPOOL_SIZE" };
}

/**
 * A warning for the operator when llama.cpp runs on the CPU from libuv's default pool of several
 * threads, which `hearth serve` leaves where a GPU device exists or off Linux (bin/libuvPool.cjs):
 * one stream then decoded at about 0.6x the speed it reaches with a pool of one thread.
 * Nothing when the pool has one thread or the operator set its size.
 */
export function cpuDecodePoolNotice(onCpu: boolean, env: NodeJS.ProcessEnv = process.env): BackendNotice[] {
  // Set (by the operator, or by `hearth serve` to one thread): nothing to say.
  if (!onCpu || env.UV_THREADPOOL_SIZE !== undefined) return [];
  const size = libuvPoolSize(env);
  return [
    {
      message: `llama.cpp runs on the CPU while libuv's thread pool has ${size} threads, so its decodes start from changing threads (about 0.6x the speed of one stream with one thread): on a CPU-only node start Hearth with UV_THREADPOOL_SIZE=1 (docs/operations.md, libuv's thread pool), or set UV_THREADPOOL_SIZE=${size} to keep this pool`,
      fields: { libuvThreads: size },
    },
  ];
}

/**
 * How many CPU threads decode one batch. A batch of one token (a lone stream's next token) is
 * memory-bound, and every barrier of its graph waits for the slowest thread. node-llama-cpp starts
 * each decode from whichever libuv pool thread is free, so with the default pool of 4 a lone
 * stream's decodes hop from thread to thread, and on a machine where llama.cpp's threads take
 * every core a two-thread single-token decode lost to a one-thread one (32.5 against 26.3 ms on
 * the 2-core machine). With a pool of one thread (UV_THREADPOOL_SIZE=1) every decode starts from
 * the same thread and all the threads win again (docs/bench.md). So "auto" uses every thread for
 * a lone token when the pool has one thread or the threads leave a core free, and one fewer
 * otherwise; batches of more than one token always use them all.
 */
export function threadsForBatch(singleTokenThreads: number | "auto", cores = availableParallelism(), poolSize = libuvPoolSize()) {
  return ({ batchSize, threads }: { batchSize: number; threads: number }): number => {
    if (batchSize !== 1) return threads;
    if (singleTokenThreads !== "auto") return Math.min(threads, singleTokenThreads);
    return threads > 1 && threads >= cores && poolSize > 1 ? threads - 1 : threads;
  };
}
