import type { LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";
import { ModelAtCapacityError } from "../../errors.js";

export interface SequenceRequest {
  prompt: readonly Token[];
  /** Sequences wanted at once (a request for `n` choices takes `n`). */
  count: number;
  /** A prompt_cache_key: the sequence last used with this key is preferred while free. */
  cacheKey?: string;
  signal?: AbortSignal;
}

export interface SequenceRelease {
  cacheKey?: string;
  /** Leading prompt tokens worth keeping (cache breakpoints, system prompt). */
  pinnedTokens: number;
}

interface Slot {
  /** The sequence's place in the context (its id). */
  index: number;
  sequence: LlamaContextSequence;
  cacheKey: string | undefined;
  pinnedTokens: number;
  lastUsedAt: number;
}

interface Waiter {
  request: SequenceRequest;
  resolve: (sequences: LlamaContextSequence[]) => void;
  reject: (error: unknown) => void;
  /** Its listener on the request's signal, removed once the wait ends either way. */
  onAbort?: () => void;
}

/** A shared prefix shorter than this (a chat template's opening tokens) is not worth keeping a sequence for. */
const MIN_USEFUL_PREFIX = 16;

/**
 * Reusing a sequence overwrites what it holds past the shared prefix. That is worth it when
 * the prefix is most of what the sequence holds (a conversation going on, a document asked
 * about again) or covers its pinned prefix (a system prompt or breakpoint); a few shared
 * template tokens are not worth another request's cache.
 */
function isWorthReusing(slot: Slot, shared: number): boolean {
  if (shared < MIN_USEFUL_PREFIX) return false;
  const held = slot.sequence.nextTokenIndex;
  return shared * 2 >= held || (slot.pinnedTokens > 0 && shared >= slot.pinnedTokens);
}

/**
 * Hands out the sequences of one context (continuous batching: node-llama-cpp evaluates
 * busy sequences together) with a bounded FIFO wait queue. The KV cache each sequence
 * holds is the prompt cache, so choosing a sequence is choosing what to reuse and what to
 * overwrite: a request goes to the sequence its prompt_cache_key used last, else to the
 * one sharing the longest prefix with its prompt; when nothing useful is shared it
 * overwrites the least valuable cache: one no key owns, with the fewest pinned tokens, an
 * empty one first, else one next to a busy sequence, else the one used longest ago.
 *
 * Why next to a busy one: each sequence has its own KV cache stream, and llama.cpp decodes a
 * batch as one pass over the weights per run of consecutive sequence ids; busy sequences
 * 0-3 decode in one pass, busy sequences 0, 2, 5 and 9 in four.
 */
export class SequencePool {
  private readonly slots: Slot[] = [];
  private readonly free = new Set<Slot>();
  private readonly bySequence = new Map<LlamaContextSequence, Slot>();
  private readonly byKey = new Map<string, Slot>();
  private readonly waiters: Waiter[] = [];

  constructor(
    context: LlamaContext,
    private readonly modelId: string,
    private readonly maxWaiting: number,
  ) {
    for (let i = 0; i < context.totalSequences; i++) {
      const slot: Slot = { index: i, sequence: context.getSequence(), cacheKey: undefined, pinnedTokens: 0, lastUsedAt: 0 };
      this.slots.push(slot);
      this.free.add(slot);
      this.bySequence.set(slot.sequence, slot);
    }
  }

  get total(): number {
    return this.slots.length;
  }

  acquire(request: SequenceRequest): Promise<LlamaContextSequence[]> {
    request.signal?.throwIfAborted();
    if (request.count > this.total) throw new RangeError(`asked for ${request.count} sequences of ${this.total}`);
    if (this.waiters.length === 0 && this.free.size >= request.count) return Promise.resolve(this.take(request));
    if (this.waiters.length >= this.maxWaiting) return Promise.reject(new ModelAtCapacityError(this.modelId));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { request, resolve, reject };
      this.waiters.push(waiter);
      if (request.signal) {
        waiter.onAbort = () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) {
            this.waiters.splice(index, 1);
            reject(request.signal!.reason);
            this.serveWaiters();
          }
        };
        request.signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
    });
  }

  release(sequence: LlamaContextSequence, info: SequenceRelease): void {
    const slot = this.bySequence.get(sequence)!;
    slot.lastUsedAt = performance.now();
    slot.pinnedTokens = Math.min(info.pinnedTokens, sequence.nextTokenIndex);
    if (info.cacheKey !== undefined) {
      const previous = this.byKey.get(info.cacheKey);
      if (previous && previous !== slot) previous.cacheKey = undefined;
      if (slot.cacheKey !== undefined && slot.cacheKey !== info.cacheKey) this.byKey.delete(slot.cacheKey);
      slot.cacheKey = info.cacheKey;
      this.byKey.set(info.cacheKey, slot);
    }
    this.free.add(slot);
    this.serveWaiters();
  }

  /** Fails every waiter (used on shutdown). */
  rejectWaiters(error: unknown): void {
    for (const waiter of this.waiters.splice(0)) {
      this.endWait(waiter);
      waiter.reject(error);
    }
  }

  stats() {
    return { sequences: this.total, busy: this.total - this.free.size, waiting: this.waiters.length };
  }

  private serveWaiters(): void {
    // FIFO: the head of the queue is served first, even if a later, smaller request would fit.
    while (this.waiters.length > 0 && this.free.size >= this.waiters[0]!.request.count) {
      const waiter = this.waiters.shift()!;
      this.endWait(waiter);
      waiter.resolve(this.take(waiter.request));
    }
  }

  /**
   * A listener left on a served request's signal would keep the waiter (its prompt's tokens) as
   * long as the signal lives, and a signal made by AbortSignal.any or AbortSignal.timeout with a
   * listener on it is held by Node itself until it aborts or the listener goes: a leak per queued
   * request (found by `npm run soak`).
   */
  private endWait(waiter: Waiter): void {
    if (waiter.onAbort) waiter.request.signal?.removeEventListener("abort", waiter.onAbort);
  }

  private take(request: SequenceRequest): LlamaContextSequence[] {
    const taken: LlamaContextSequence[] = [];
    const keyed = request.cacheKey !== undefined ? this.byKey.get(request.cacheKey) : undefined;
    if (keyed && this.free.has(keyed)) taken.push(this.claim(keyed, request, keyed.sequence.compareContextTokens(request.prompt as Token[]).firstDifferentIndex));
    while (taken.length < request.count) {
      let best: { slot: Slot; shared: number; score: number[] } | undefined;
      for (const slot of this.free) {
        const shared = slot.sequence.compareContextTokens(request.prompt as Token[]).firstDifferentIndex;
        const useful = isWorthReusing(slot, shared) ? shared : 0;
        const ownedByOther = slot.cacheKey !== undefined && slot.cacheKey !== request.cacheKey ? 1 : 0;
        const empty = slot.sequence.nextTokenIndex === 0 ? 1 : 0;
        // Higher is better, compared element by element.
        const score = [useful, -ownedByOther, -slot.pinnedTokens, empty, this.nextToBusy(slot) ? 1 : 0, -slot.lastUsedAt];
        if (!best || isBetter(score, best.score)) best = { slot, shared, score };
      }
      taken.push(this.claim(best!.slot, request, best!.shared));
    }
    return taken;
  }

  private nextToBusy(slot: Slot): boolean {
    const busy = (index: number) => index >= 0 && index < this.slots.length && !this.free.has(this.slots[index]!);
    return busy(slot.index - 1) || busy(slot.index + 1);
  }

  private claim(slot: Slot, request: SequenceRequest, shared: number): LlamaContextSequence {
    this.free.delete(slot);
    // Overwriting what a key or a breakpoint kept means the sequence no longer holds it.
    if (shared < slot.pinnedTokens || (slot.cacheKey !== undefined && slot.cacheKey !== request.cacheKey && shared < MIN_USEFUL_PREFIX)) {
      if (slot.cacheKey !== undefined && this.byKey.get(slot.cacheKey) === slot) this.byKey.delete(slot.cacheKey);
      slot.cacheKey = undefined;
      slot.pinnedTokens = Math.min(slot.pinnedTokens, shared);
    }
    return slot.sequence;
  }
}

function isBetter(a: number[], b: number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    if (a[i]! !== b[i]!) return a[i]! > b[i]!;
  }
  return false;
}
