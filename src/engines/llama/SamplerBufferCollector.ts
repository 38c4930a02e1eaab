import { fullGarbageCollection } from "../../garbageCollection.js";

/** sizeof(llama_token_data): a token id (int32), its logit and its probability (floats). */
const CANDIDATE_BYTES = 12;

/**
 * node-llama-cpp gives every evaluation (a generation, or a restart of one) a native sampler that
 * holds a buffer of candidates for the whole vocabulary: 1.8 MB for Qwen2.5's 151,936 tokens.
 * Disposing of the sampler frees its llama.cpp samplers but not that buffer, which goes only when
 * V8 collects the sampler's JavaScript object. V8 is not told the buffer exists, and a served
 * request leaves too little on V8's own heap to start a full collection, so the buffers pile up:
 * a Hearth serving four streams on that vocabulary grew by 31 MB every 16 requests, 560 MB over
 * 320, and stayed flat with a full collection between batches.
 *
 * So the engine reports each sampler it starts, and past `thresholdBytes` of such buffers the
 * collector runs one full collection (about 20 ms on a 2-core machine, 30 MB of heap) on the next
 * turn of the event loop.
 */
export class SamplerBufferCollector {
  private pendingBytes = 0;
  private scheduled = false;
  private collected = 0;

  /** collect: a full garbage collection, or null where none can be had (nothing is then done). */
  constructor(
    private readonly thresholdBytes: number,
    private readonly collect: () => (() => void) | null,
  ) {}

  /** One sampler started over a vocabulary of this many tokens; its buffer is garbage once the evaluation ends. */
  samplerStarted(vocabularySize: number): void {
    this.pendingBytes += vocabularySize * CANDIDATE_BYTES;
    if (this.pendingBytes < this.thresholdBytes || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const gc = this.collect();
      if (!gc) return;
      this.pendingBytes = 0;
      gc();
      this.collected++;
    });
  }

  /** Full collections run so far. */
  get collections(): number {
    return this.collected;
  }
}

/** The process's collector: every llama engine shares V8's heap. 64 MB is about 35 samplers of a 152k vocabulary. */
export const samplerBuffers = new SamplerBufferCollector(64 * 2 ** 20, fullGarbageCollection);
