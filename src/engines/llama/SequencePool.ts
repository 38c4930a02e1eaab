import type { LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";
import { ModelAtCapacityError } from "../../errors.js";

interface Waiter {
  prompt: readonly Token[];
  resolve: (sequence: LlamaContextSequence) => void;
  reject: (error: unknown) => void;
}

/**
 * Hands out the sequences of one context (continuous batching: node-llama-cpp evaluates
 * busy sequences together) with a bounded FIFO wait queue. Among free sequences it picks
 * the one whose cached tokens share the longest prefix with the prompt, so repeated
 * system prompts and multi-turn conversations reuse their KV cache.
 */
export class SequencePool {
  private readonly free: LlamaContextSequence[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly total: number;

  constructor(
    context: LlamaContext,
    private readonly modelId: string,
    private readonly maxWaiting: number,
  ) {
    this.total = context.totalSequences;
    for (let i = 0; i < this.total; i++) this.free.push(context.getSequence());
  }

  acquire(prompt: readonly Token[], signal?: AbortSignal): Promise<LlamaContextSequence> {
    signal?.throwIfAborted();
    if (this.free.length > 0) return Promise.resolve(this.takeBestFor(prompt));
    if (this.waiters.length >= this.maxWaiting) return Promise.reject(new ModelAtCapacityError(this.modelId));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { prompt, resolve, reject };
      this.waiters.push(waiter);
      signal?.addEventListener(
        "abort",
        () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) {
            this.waiters.splice(index, 1);
            reject(signal.reason);
          }
        },
        { once: true },
      );
    });
  }

  release(sequence: LlamaContextSequence): void {
    const next = this.waiters.shift();
    if (next) next.resolve(sequence);
    else this.free.push(sequence);
  }

  /** Fails every waiter (used on shutdown). */
  rejectWaiters(error: unknown): void {
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }

  stats() {
    return { sequences: this.total, busy: this.total - this.free.length, waiting: this.waiters.length };
  }

  private takeBestFor(prompt: readonly Token[]): LlamaContextSequence {
    let bestIndex = 0;
    let bestShared = -1;
    for (const [index, sequence] of this.free.entries()) {
      const shared = sequence.compareContextTokens(prompt as Token[]).firstDifferentIndex;
      if (shared > bestShared) {
        bestShared = shared;
        bestIndex = index;
      }
    }
    return this.free.splice(bestIndex, 1)[0]!;
  }
}
