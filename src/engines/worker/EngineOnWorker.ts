import type { TransferListItem } from "node:worker_threads";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { type PreparePayload, TaskAbortedError, WorkerPool } from "./WorkerPool.js";

/** What an engine's worker module loads: the model's entry and where it may run. */
export interface EngineWorkerData {
  entry: ModelEntry;
  gpu: "auto" | false;
}

/** Starts the one worker that holds a whole engine (`workerModule` calls serveWorker and loads it from EngineWorkerData). */
export function startEngineWorker(workerModule: URL, entry: ModelEntry, gpu: "auto" | false): Promise<WorkerPool> {
  const data: EngineWorkerData = { entry, gpu };
  return WorkerPool.start({ name: entry.id, entry: workerModule, data, size: 1, maxWaiting: entry.queue.maxWaiting });
}

/**
 * The main-thread side of an engine that runs whole on a worker thread (Whisper, MusicGen, vision chat):
 * one task at a time there, the rest waiting here up to the model's queue limit (503 past it),
 * and the queue shown in the admin listing. Subclasses turn their engine interface into tasks.
 */
export abstract class EngineOnWorker {
  protected constructor(protected readonly pool: WorkerPool) {}

  /** Runs a task; a cancelled one fails with its signal's reason, as the engine in one thread would. */
  protected runTask<R>(task: unknown, signal: AbortSignal | undefined, onEvent?: (event: unknown) => void, transfer?: TransferListItem[]): Promise<R> {
    return this.settled(this.pool.run<R>(task, { signal, onEvent, transfer }), signal);
  }

  /** As runTask, with the task made once the worker is free for it (WorkerPool.runWhenFree). */
  protected runTaskWhenFree<R>(prepare: PreparePayload, signal: AbortSignal | undefined, onEvent?: (event: unknown) => void): Promise<R> {
    return this.settled(this.pool.runWhenFree<R>(prepare, { signal, onEvent }), signal);
  }

  private async settled<R>(running: Promise<{ result: R }>, signal: AbortSignal | undefined): Promise<R> {
    try {
      return (await running).result;
    } catch (error) {
      if (error instanceof TaskAbortedError && signal?.aborted) throw signal.reason;
      throw error;
    }
  }

  stats(): { busy: number; waiting: number } {
    const { busy, waiting } = this.pool.stats();
    return { busy, waiting };
  }

  dispose(): Promise<void> {
    return this.pool.dispose();
  }
}
