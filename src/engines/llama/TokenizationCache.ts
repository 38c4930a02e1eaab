import type { Token, Tokenizer } from "node-llama-cpp";

export interface TokenizationCacheLimits {
  /** Pieces shorter than this are tokenized every time: cheap, and too many to be worth keeping. */
  minChars: number;
  /** The most text kept, in characters; the least recently used pieces go first. */
  maxChars: number;
}

const DEFAULT_LIMITS: TokenizationCacheLimits = { minChars: 256, maxChars: 4_000_000 };
/** Special-token text longer than this is tokenized in pieces where the model allows it. */
const SPECIAL_PIECE_CHARS = 8192;

/**
 * A model's tokenizer that remembers the tokens of long pieces of text. A rendered prompt is
 * tokenized piece by piece between its special tokens, one piece per message body, and the long
 * pieces repeat: the system prompt, the tool definitions, the conversation so far. llama.cpp's
 * BPE tokenizer runs on the JavaScript thread, where every stream of the node waits for it:
 * about 1.2 ms of a 155-token prompt's 1.5 ms of planning on the 2-core machine went to it, and a
 * system prompt of several thousand tokens costs tens of milliseconds. Tokenizing is a pure
 * function of the model, the text and the options, so a piece seen before gets its tokens back.
 */
export class TokenizationCache {
  private readonly pieces = new Map<string, { tokens: readonly Token[]; chars: number }>();
  private chars = 0;
  private readonly limits: TokenizationCacheLimits;
  /** Use in place of the model's tokenizer (LlamaText.tokenize takes it). */
  readonly tokenize: Tokenizer;

  constructor(
    private readonly tokenizer: Tokenizer,
    limits: Partial<TokenizationCacheLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    const tokenize = (text: string, specialTokens?: boolean | "builtin", options?: "trimLeadingSpace"): Token[] => {
      if (specialTokens === true && text.length > SPECIAL_PIECE_CHARS && this.markers.length > 0) return this.inPieces(text, options);
      if (specialTokens === "builtin" || text.length < this.limits.minChars || text.length > this.limits.maxChars) {
        return tokenizer(text as never, specialTokens as never, options as never);
      }
      const key = `${specialTokens ? "s" : "t"}${options === "trimLeadingSpace" ? "l" : "-"}${text}`;
      const known = this.pieces.get(key);
      if (known) {
        // Most recently used last, so eviction takes the oldest.
        this.pieces.delete(key);
        this.pieces.set(key, known);
        return known.tokens.slice();
      }
      const tokens = tokenizer(text, specialTokens, options);
      this.keep(key, { tokens: tokens.slice(), chars: text.length });
      return tokens;
    };
    this.tokenize = Object.assign(tokenize, {
      detokenize: tokenizer.detokenize,
      isSpecialToken: tokenizer.isSpecialToken,
      isEogToken: tokenizer.isEogToken,
    }) as Tokenizer;
  }

  /** Special-token texts a long special text may be cut after (see `cutAfterSpecialTokens`). */
  private markers: readonly string[] = [];

  /**
   * Lets long special-token text be tokenized in pieces cut right after the given special tokens,
   * if that gives `sample` exactly the tokens it gets whole (else nothing changes). llama.cpp's
   * search for special tokens in a text is quadratic in its length: the scaffolding a template
   * writes around 20,000 empty messages (580 KB) took 4.7 s of the event loop whole and 78 ms in
   * pieces. A special token is a cut llama.cpp makes anyway: the text on each side of it is
   * tokenized on its own, so pieces that end with one change nothing.
   */
  cutAfterSpecialTokens(markers: readonly string[], sample: string): boolean {
    const usable = markers.filter((marker) => marker.length > 0);
    if (usable.length === 0) return false;
    this.markers = usable;
    const whole = this.tokenizer(sample, true);
    const pieces = this.inPieces(sample, undefined, 64);
    const same = whole.length === pieces.length && whole.every((token, i) => token === pieces[i]);
    if (!same) this.markers = [];
    return same;
  }

  private inPieces(text: string, options: "trimLeadingSpace" | undefined, pieceChars = SPECIAL_PIECE_CHARS / 4): Token[] {
    const tokens: Token[] = [];
    // Where each marker next occurs (-1: not again), searched forward only, so the text is read once per marker.
    const next = this.markers.map((marker) => text.indexOf(marker));
    let start = 0;
    while (start < text.length) {
      const from = start + pieceChars;
      let end = text.length;
      for (const [i, marker] of this.markers.entries()) {
        if (next[i]! >= 0 && next[i]! + marker.length < from) next[i] = text.indexOf(marker, from - marker.length);
        if (next[i]! >= 0) end = Math.min(end, next[i]! + marker.length);
      }
      for (const token of this.tokenizer(text.slice(start, end), true, start === 0 ? options : undefined)) tokens.push(token);
      start = end;
    }
    return tokens;
  }

  private keep(key: string, piece: { tokens: readonly Token[]; chars: number }): void {
    this.pieces.set(key, piece);
    this.chars += piece.chars;
    for (const [oldKey, old] of this.pieces) {
      if (this.chars <= this.limits.maxChars) break;
      this.pieces.delete(oldKey);
      this.chars -= old.chars;
    }
  }

  /** Pieces and characters kept (tests, diagnostics). */
  size(): { pieces: number; chars: number } {
    return { pieces: this.pieces.size, chars: this.chars };
  }
}
