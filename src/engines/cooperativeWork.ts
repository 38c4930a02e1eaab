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
