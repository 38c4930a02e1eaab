import { setImmediate } from "node:timers/promises";

/**
 * Lets other requests' callbacks run between slices of CPU work on request data (tokenizing
 * long inputs), so one request's work never holds the event loop for more than a slice.
 */
export class CooperativeSlicer {
  private sliceStart = performance.now();

  constructor(private readonly sliceMs = 8) {}

  /** Yields once the current slice has run its time; call between units of work. */
  async pause(): Promise<void> {
    if (performance.now() - this.sliceStart < this.sliceMs) return;
    await setImmediate();
    this.sliceStart = performance.now();
  }
}

/**
 * Bytes copied per turn of the event loop by `copyInSlices`. Copying is fast; first touching
 * fresh memory is not everywhere: on the 2-core host a fresh 45 MB array took 0.2 s to fill.
 */
const COPY_SLICE_BYTES = 2 << 20;

/**
 * Copies `chunks` one after another into `into` from its start (as much as fits), letting other
 * callbacks run between slices: for the large buffers a request makes (decoded audio, an encoded
 * file, a document handed to a worker), where Buffer.concat would copy them all in one call.
 * Returns the bytes copied.
 */
export async function copyInSlices(chunks: readonly Uint8Array[], into: Uint8Array, signal?: AbortSignal): Promise<number> {
  let offset = 0;
  let sinceYield = 0;
  for (const chunk of chunks) {
    for (let from = 0; from < chunk.length && offset < into.length; ) {
      const piece = chunk.subarray(from, from + Math.min(COPY_SLICE_BYTES - sinceYield, into.length - offset));
      into.set(piece, offset);
      offset += piece.length;
      from += piece.length;
      sinceYield += piece.length;
      if (sinceYield >= COPY_SLICE_BYTES) {
        await setImmediate();
        signal?.throwIfAborted();
        sinceYield = 0;
      }
    }
  }
  return offset;
}

/**
 * A long text as chunks of at most `size` characters, each cut just before whitespace where
 * there is some in the chunk's second half (a hard cut otherwise), so that tokenizers that
 * split words at whitespace see the same words in the chunks as in the whole.
 */
export function* chunksAtWhitespace(text: string, size: number): Generator<string> {
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const window = text.slice(start + Math.floor(size / 2), end);
      const cut = window.search(/\s\S*$/);
      if (cut >= 0) end = start + Math.floor(size / 2) + cut;
    }
    yield text.slice(start, end);
    start = end;
  }
}
