import type { ChatGenerateResult } from "../../engines/types.js";
import type { ChatTimer } from "../../metrics/Metrics.js";

/** A minimal push queue consumed with for-await; used to bridge engine callbacks to a generator. */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private closed = false;
  private error: unknown;
  private wake: (() => void) | undefined;

  push(item: T): void {
    this.items.push(item);
    this.wake?.();
  }
  close(): void {
    this.closed = true;
    this.wake?.();
  }
  fail(error: unknown): void {
    this.error = error;
    this.close();
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.items.length) {
        yield this.items.shift()!;
        continue;
      }
      if (this.error) throw this.error;
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

/**
 * Starts an engine generation whose pieces a stream sends as they come: the engine's callbacks
 * push into a queue the stream reads, the timer sees the start, each piece and the end, and a
 * failure surfaces through the queue (never as an unhandled rejection). Resolves once the engine
 * has started, or rejects if it refused first: nothing is sent before the engine accepts the
 * request, so its refusals keep their status codes.
 */
export async function startStreamedGeneration<R extends ChatGenerateResult, T>(
  timer: ChatTimer,
  run: (hooks: { onStart: () => void; onPiece: (index: number) => void }, queue: AsyncQueue<T>) => Promise<R>,
): Promise<{ queue: AsyncQueue<T>; generation: Promise<R> }> {
  const queue = new AsyncQueue<T>();
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const hooks = {
    onStart: () => {
      timer.started();
      markStarted();
    },
    onPiece: (index: number) => timer.piece(index),
  };
  const generation = run(hooks, queue)
    .then((result) => {
      timer.finished(result);
      return result;
    })
    .finally(() => queue.close());
  generation.catch((error: unknown) => queue.fail(error));
  await Promise.race([started, generation]);
  return { queue, generation };
}
