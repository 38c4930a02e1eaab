import { ModelAtCapacityError } from "../errors.js";

/**
 * Runs jobs one (or `concurrency`) at a time in arrival order, with a bounded wait list: the
 * ONNX engines share a few CPU cores, so parallel runs only slow each other down. A full wait
 * list answers 503; a job whose signal aborts while waiting leaves the list without running.
 */
export class WorkQueue {
  private running = 0;
  private readonly waiting: { start: () => void; signal?: AbortSignal; onAbort: () => void }[] = [];

  constructor(
    private readonly modelId: string,
    private readonly maxWaiting: number,
    private readonly concurrency = 1,
  ) {}

  async run<T>(job: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.maxWaiting) throw new ModelAtCapacityError(this.modelId);
      await new Promise<void>((resolve, reject) => {
        const entry = {
          signal,
          start: () => {
            signal?.removeEventListener("abort", entry.onAbort);
            resolve();
          },
          onAbort: () => {
            const index = this.waiting.indexOf(entry);
            if (index >= 0) this.waiting.splice(index, 1);
            reject(signal!.reason);
          },
        };
        signal?.addEventListener("abort", entry.onAbort, { once: true });
        this.waiting.push(entry);
      });
    } else {
      this.running++;
    }
    try {
      return await job();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next job, so `running` only drops when nobody waits.
      if (next) next.start();
      else this.running--;
    }
  }

  stats(): { busy: number; waiting: number } {
    return { busy: this.running, waiting: this.waiting.length };
  }
}
