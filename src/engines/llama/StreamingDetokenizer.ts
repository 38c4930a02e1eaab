import type { LlamaModel, Token } from "node-llama-cpp";

/**
 * Turns generated tokens into text deltas that are safe to show: a token that ends inside
 * a multi-byte UTF-8 character is held until the character completes, and text that could
 * be the start of a stop string is held until it is clear it is not.
 */
export class StreamingDetokenizer {
  private readonly tokens: Token[] = [];
  private decodedUpTo = 0;
  private pending = "";
  private emitted = "";
  private readonly maxStopLength: number;

  constructor(
    private readonly model: LlamaModel,
    private readonly stopStrings: readonly string[],
    /** Grammar-held text is matched against special tokens' text too, so it is shown with it. */
    private readonly specialTokens = false,
  ) {
    this.maxStopLength = Math.max(0, ...stopStrings.map((s) => s.length));
  }

  /** Adds a token; returns the new visible text and whether a stop string was reached. */
  push(token: Token): { delta: string; stopped: boolean } {
    this.tokens.push(token);
    const fresh = this.tokens.slice(this.decodedUpTo);
    const context = this.tokens.slice(Math.max(0, this.decodedUpTo - 4), this.decodedUpTo);
    const text = this.model.detokenize(fresh, this.specialTokens, context);
    // An incomplete UTF-8 sequence decodes to U+FFFD; wait for the rest of the character.
    if (text.endsWith("\uFFFD") && fresh.length < 4) return { delta: "", stopped: false };
    this.decodedUpTo = this.tokens.length;
    this.pending += text;
    return this.release(false);
  }

  /** Releases everything still held (generation ended for another reason). */
  flush(): string {
    return this.release(true).delta;
  }

  get text(): string {
    return this.emitted;
  }

  private release(final: boolean): { delta: string; stopped: boolean } {
    let cut = -1;
    for (const stop of this.stopStrings) {
      const at = this.pending.indexOf(stop);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      const delta = this.pending.slice(0, cut);
      this.pending = "";
      this.emitted += delta;
      return { delta, stopped: true };
    }
    let hold = 0;
    if (!final) {
      // Hold the longest tail that is a prefix of some stop string.
      for (let n = Math.min(this.maxStopLength - 1, this.pending.length); n > 0; n--) {
        const tail = this.pending.slice(-n);
        if (this.stopStrings.some((stop) => stop.startsWith(tail))) {
          hold = n;
          break;
        }
      }
    }
    const delta = this.pending.slice(0, this.pending.length - hold);
    this.pending = this.pending.slice(this.pending.length - hold);
    this.emitted += delta;
    return { delta, stopped: false };
  }
}
