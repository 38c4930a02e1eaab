import type { TransferListItem } from "node:worker_threads";
import type { ModelEntry } from "../../config/modelRegistry.js";
import { TaskAbortedError, WorkerPool } from "./WorkerPool.js";

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
  protected async runTask<R>(task: unknown, signal: AbortSignal | undefined, onEvent?: (event: unknown) => void, transfer?: TransferListItem[]): Promise<R> {
    try {
      return (await this.pool.run<R>(task, { signal, onEvent, transfer })).result;
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
